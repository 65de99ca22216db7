// Package archtest holds the test that keeps the package layering of docs/design.md
// §"Packages": which packages may depend on which. It has no code of its own.
package archtest

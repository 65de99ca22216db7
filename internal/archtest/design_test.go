package archtest

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// designDoc is the document whose §Packages this file checks against the code.
const designDoc = "../../docs/design.md"

// packageRow is one row of a table in docs/design.md §Packages: the packages it names (a row
// may name several, or a pattern such as models/* or scripts/*.sh) and what it says they provide.
type packageRow struct {
	line     int
	names    []string
	provides string
}

// packagesSection returns the lines of docs/design.md §Packages, numbered from 1.
func packagesSection(t *testing.T) (lines []string, first int) {
	t.Helper()
	b, err := os.ReadFile(designDoc)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Split(string(b), "\n")
	start := slices.Index(all, "## Packages")
	if start < 0 {
		t.Fatalf("%s: no \"## Packages\" heading", designDoc)
	}
	end := len(all)
	for i := start + 1; i < len(all); i++ {
		if strings.HasPrefix(all[i], "## ") {
			end = i
			break
		}
	}
	return all[start:end], start + 1
}

var backticked = regexp.MustCompile("`([^`]+)`")

// packageRows parses the tables of §Packages: every row "| `a`, `b` | provides |" below a
// "| package | provides |" header.
func packageRows(t *testing.T) []packageRow {
	t.Helper()
	lines, first := packagesSection(t)
	var rows []packageRow
	for i, l := range lines {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		cells := strings.SplitN(l, "|", 4)
		if len(cells) < 4 {
			t.Fatalf("%s:%d: a package row without two cells: %q", designDoc, first+i, l)
		}
		var names []string
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			names = append(names, m[1])
		}
		rows = append(rows, packageRow{first + i, names, cells[2]})
	}
	if len(rows) < 40 {
		t.Fatalf("%s: only %d package rows found", designDoc, len(rows))
	}
	return rows
}

// modulePackages lists every folder of the module holding Go files (test files alone count:
// scripts/campaign has no code but is a package of tests), by its path inside the module;
// testdata folders are skipped, except internal/testdata, a package the tests import.
func modulePackages(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != "../.." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || (name == "testdata" && path != "../../internal/testdata") || name == "runs" || name == "bin") {
			return filepath.SkipDir
		}
		if gos, _ := filepath.Glob(filepath.Join(path, "*.go")); len(gos) > 0 && path != "../.." {
			out = append(out, filepath.ToSlash(strings.TrimPrefix(path, "../../")))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// rowCovers says whether a row's name (a package path, a path with a * element, or scripts/*.sh,
// which names no package) covers the package pkg.
func rowCovers(name, pkg string) bool {
	if ok, _ := filepath.Match(name, pkg); ok {
		return true
	}
	return name == pkg
}

// TestDesignListsEveryPackage checks that docs/design.md §Packages has a row for every package
// of the module and names no package that does not exist: a package added, moved or deleted
// without its row fails here.
func TestDesignListsEveryPackage(t *testing.T) {
	rows := packageRows(t)
	pkgs := modulePackages(t)
	for _, p := range pkgs {
		found := false
		for _, r := range rows {
			for _, n := range r.names {
				found = found || rowCovers(n, p)
			}
		}
		if !found {
			t.Errorf("%s §Packages has no row for package %s", designDoc, p)
		}
	}
	for _, r := range rows {
		for _, n := range r.names {
			if strings.HasSuffix(n, ".sh") {
				if m, _ := filepath.Glob(filepath.Join("../..", n)); len(m) == 0 {
					t.Errorf("%s:%d: %s matches no file", designDoc, r.line, n)
				}
				continue
			}
			if !slices.ContainsFunc(pkgs, func(p string) bool { return rowCovers(n, p) }) {
				t.Errorf("%s:%d: the row names %s, which is not a package of the module", designDoc, r.line, n)
			}
		}
	}
}

// declared collects what a package declares: its top-level names, T.M for each method M of T,
// T.F for each field F of a struct type T, and the names of its files.
func declared(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	dir := filepath.Join("../..", pkg)
	out := map[string]bool{}
	fset := token.NewFileSet()
	gos, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, path := range gos {
		out[filepath.Base(path)] = true
		if !strings.HasSuffix(path, ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			declare(out, d)
		}
	}
	return out
}

// declare adds the names one declaration introduces.
func declare(out map[string]bool, d ast.Decl) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil || len(d.Recv.List) == 0 {
			out[d.Name.Name] = true
			return
		}
		out[receiverType(d.Recv.List[0].Type)+"."+d.Name.Name] = true
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				out[s.Name.Name] = true
				declareMembers(out, s.Name.Name, s.Type)
			case *ast.ValueSpec:
				for _, n := range s.Names {
					out[n.Name] = true
				}
			}
		}
	}
}

// declareMembers adds T.F for the fields of a struct and T.M for the methods of an interface.
func declareMembers(out map[string]bool, typ string, e ast.Expr) {
	var fields *ast.FieldList
	switch e := e.(type) {
	case *ast.StructType:
		fields = e.Fields
	case *ast.InterfaceType:
		fields = e.Methods
	default:
		return
	}
	for _, f := range fields.List {
		for _, n := range f.Names {
			out[typ+"."+n.Name] = true
		}
	}
}

// receiverType is a method receiver's type name without pointer or type parameters.
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// fileExists says whether path names a file of the repository, or of one of the packages pkgs.
func fileExists(path string, pkgs []string) bool {
	for _, dir := range append([]string{""}, pkgs...) {
		if _, err := os.Stat(filepath.Join("../..", dir, path)); err == nil {
			return true
		}
	}
	return false
}

// hasName says whether decls declare name: as a top-level name, T.M, or a bare M that is a
// method or field of one of the package's types (`Propagate` in a row that has named the
// `Builder` it belongs to).
func hasName(decls map[string]bool, name string) bool {
	if decls[name] {
		return true
	}
	if strings.Contains(name, ".") {
		return false
	}
	for d := range decls {
		if strings.HasSuffix(d, "."+name) && !strings.HasSuffix(d, ".go") {
			return true
		}
	}
	return false
}

// identifier matches what a row's text cites from its package: an exported name or T.M,
// optionally called (`Train(ctx, Options)`), or a Go file (`folds.go`).
var identifier = regexp.MustCompile(`^([A-Z][A-Za-z0-9]*(?:\.[A-Z][A-Za-z0-9]*)?)(?:\(.*\))?$|^([a-z_0-9]+\.go)$`)

// TestDesignRowsCiteWhatExists checks every exported name and Go file a §Packages row cites
// against the packages the row names: a function renamed or a file moved without its row fails
// here. Names that qualify another package (`nn.Trainer` in gpu's row) are looked up there.
func TestDesignRowsCiteWhatExists(t *testing.T) {
	pkgs := modulePackages(t)
	decls := map[string]map[string]bool{}
	lookup := func(p string) map[string]bool {
		if decls[p] == nil {
			decls[p] = declared(t, p)
		}
		return decls[p]
	}
	for _, r := range packageRows(t) {
		var own []string
		for _, n := range r.names {
			for _, p := range pkgs {
				if rowCovers(n, p) {
					own = append(own, p)
				}
			}
		}
		if len(own) == 0 {
			continue
		}
		for _, m := range backticked.FindAllStringSubmatch(r.provides, -1) {
			cite := m[1]
			if strings.ContainsAny(cite, "<*") {
				continue // a pattern, not a name
			}
			if strings.Contains(cite, "/") && len(filepath.Ext(cite)) > 1 {
				if !fileExists(cite, own) {
					t.Errorf("%s:%d: %s: no such file in the repository or in %s", designDoc, r.line, cite, strings.Join(own, ", "))
				}
				continue
			}
			if q, rest, ok := strings.Cut(cite, "."); ok && slices.Contains(pkgs, q) && filepath.Ext(cite) != ".go" && rest != "" && rest[0] >= 'A' && rest[0] <= 'Z' {
				if !lookup(q)[strings.SplitN(rest, "(", 2)[0]] {
					t.Errorf("%s:%d: %s is not declared in package %s", designDoc, r.line, cite, q)
				}
				continue
			}
			sm := identifier.FindStringSubmatch(cite)
			if sm == nil {
				continue
			}
			name := sm[1] + sm[2]
			if !slices.ContainsFunc(own, func(p string) bool { return hasName(lookup(p), name) }) {
				t.Errorf("%s:%d: %s is not declared in %s", designDoc, r.line, cite, strings.Join(own, ", "))
			}
		}
	}
}

// importLine matches one entry of the listing "pkg → a b c (note)" in §Packages.
var importLine = regexp.MustCompile(`^\s*([\w/*, ]+?)\s*→\s*(.*)$`)

// TestDesignImportListing checks the listing of each package's project imports in §Packages
// ("train → config data …") against the packages' non-test imports, both ways: an import added
// or dropped without the listing fails here. Parenthesised notes are not checked.
func TestDesignImportListing(t *testing.T) {
	lines, first := packagesSection(t)
	pkgs := modulePackages(t)
	in := false
	checked := 0
	for i, l := range lines {
		if strings.HasPrefix(l, "The project imports of each package") {
			in = true
			continue
		}
		if !in || strings.TrimSpace(l) == "" || strings.HasPrefix(l, "```") {
			if in && checked > 0 {
				break
			}
			continue
		}
		for _, entry := range strings.Split(l, ";") {
			m := importLine.FindStringSubmatch(entry)
			if m == nil {
				t.Errorf("%s:%d: cannot read %q", designDoc, first+i, entry)
				continue
			}
			want := listed(m[2])
			for _, name := range strings.Split(m[1], ",") {
				name = strings.TrimSpace(name)
				for _, p := range pkgs {
					if !rowCovers(name, p) {
						continue
					}
					checked++
					got := projectImports(t, p)
					if name != p { // models/*: the listing is the union over the pattern
						got = unionImports(t, pkgs, name)
					}
					if !slices.Equal(got, want) {
						t.Errorf("%s:%d: %s → %v, but its imports are %v", designDoc, first+i, p, want, got)
					}
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("%s: only %d packages' imports checked", designDoc, checked)
	}
}

// listed reads the packages of a listing's right-hand side, less parenthesised notes.
func listed(s string) []string {
	depth, b := 0, strings.Builder{}
	for _, c := range s {
		switch {
		case c == '(':
			depth++
		case c == ')':
			depth--
		case depth == 0:
			b.WriteRune(c)
		}
	}
	out := strings.Fields(b.String())
	sort.Strings(out)
	return slices.Compact(out)
}

// projectImports lists the module's packages pkg imports in its non-test files.
func projectImports(t *testing.T, pkg string) []string {
	t.Helper()
	bp, err := build.ImportDir(filepath.Join("../..", pkg), 0)
	if err != nil {
		t.Fatalf("%s: %v", pkg, err)
	}
	var out []string
	for _, imp := range bp.Imports {
		if name, ok := strings.CutPrefix(imp, module); ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// unionImports is the union of projectImports over the packages a pattern covers, less those
// packages themselves.
func unionImports(t *testing.T, pkgs []string, pattern string) []string {
	t.Helper()
	var out []string
	for _, p := range pkgs {
		if rowCovers(pattern, p) {
			out = append(out, projectImports(t, p)...)
		}
	}
	sort.Strings(out)
	out = slices.Compact(out)
	return slices.DeleteFunc(out, func(p string) bool { return rowCovers(pattern, p) })
}

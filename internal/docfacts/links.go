package docfacts

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// link matches a Markdown inline link's target: [text](target) or [text](target "title").
var link = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)

// heading matches a Markdown heading line.
var heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)

// BrokenLinks returns every relative link in the docs (README.md and docs/**/*.md) whose file
// does not exist, or whose #anchor names no heading of the Markdown file it points into.
// Links with a scheme (https:, mailto:) are not followed. Fenced code blocks are skipped.
func BrokenLinks(root string) ([]string, error) {
	docs, err := Docs(root)
	if err != nil {
		return nil, err
	}
	anchors := map[string]map[string]bool{}
	var bad []string
	for _, rel := range docs {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return nil, fmt.Errorf("docfacts: %w", err)
		}
		fenced := false
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
			}
			if fenced {
				continue
			}
			for _, m := range link.FindAllStringSubmatch(stripCode(line), -1) {
				if msg := checkLink(root, rel, m[1], anchors); msg != "" {
					bad = append(bad, fmt.Sprintf("%s:%d: %s", rel, i+1, msg))
				}
			}
		}
	}
	return bad, nil
}

// stripCode removes inline code spans, whose brackets are not links.
func stripCode(line string) string {
	parts := strings.Split(line, "`")
	for i := 1; i < len(parts); i += 2 {
		parts[i] = ""
	}
	return strings.Join(parts, "")
}

// checkLink says what is wrong with one link target of the doc rel ("" when it resolves).
func checkLink(root, rel, target string, anchors map[string]map[string]bool) string {
	if strings.Contains(target, ":") {
		return "" // a URL
	}
	path, anchor, _ := strings.Cut(target, "#")
	file := rel
	if path != "" {
		file = filepath.Join(filepath.Dir(rel), filepath.FromSlash(path))
		if _, err := os.Stat(filepath.Join(root, file)); err != nil {
			return fmt.Sprintf("link %s: no file %s", target, filepath.ToSlash(file))
		}
	}
	if anchor == "" || !strings.HasSuffix(file, ".md") {
		return ""
	}
	hs, ok := anchors[file]
	if !ok {
		var err error
		if hs, err = headings(filepath.Join(root, file)); err != nil {
			return fmt.Sprintf("link %s: %v", target, err)
		}
		anchors[file] = hs
	}
	if !hs[anchor] {
		return fmt.Sprintf("link %s: %s has no heading #%s", target, filepath.ToSlash(file), anchor)
	}
	return ""
}

// headings returns the anchors of a Markdown file's headings as GitHub makes them (lower case,
// punctuation dropped, spaces to hyphens, a repeated anchor numbered -1, -2, …).
func headings(path string) (map[string]bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	hs := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		m := heading.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		a := Slug(m[1])
		if n := seen[a]; n > 0 {
			hs[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			hs[a] = true
		}
		seen[a]++
	}
	return hs, nil
}

// Slug is GitHub's anchor of a heading's text: lower case; letters, digits, hyphens and
// underscores kept, spaces turned to hyphens, everything else dropped.
func Slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

package kmirror_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// publicPackages are the directories of the packages users import; their
// documentation must read on its own on pkg.go.dev.
var publicPackages = []string{".", "mirror", "mirror/mirrorprom", "checkpoint", "heartbeat", "policy", "remoteclusterutils"}

// privateRefs match references that lead nowhere outside this repository:
// its docs/ files and their section numbers, the field-failure catalogue
// and its case numbers, the shared spec, and any Markdown file.
var privateRefs = []struct {
	re   *regexp.Regexp
	what string
}{
	{regexp.MustCompile(`§`), "a section sign (a docs/ section number)"},
	{regexp.MustCompile(`\bdocs/`), "a docs/ path"},
	{regexp.MustCompile(`field-failures`), "the field-failure catalogue"},
	{regexp.MustCompile(`mm2-compat`), "the MM2 compatibility notes"},
	{regexp.MustCompile(`\b[A-Za-z0-9_./-]+\.md\b`), "a Markdown file"},
	{regexp.MustCompile(`\b(?i:cases?)\s+B\d+`), "a field-failure case number"},
	{regexp.MustCompile(`\bB\d{2}\b`), "a field-failure case number"},
	{regexp.MustCompile(`\binvariant I\d\b`), "an invariant number of the repository's notes"},
	{regexp.MustCompile(`\bspec(ification)?,? (sections? )?\d`), "a section of the repository's spec"},
}

// docFinding is one private reference in a doc comment (what names it,
// text is the comment line), or a missing doc comment (what is empty, text
// is the identifier).
type docFinding struct {
	pos  token.Position
	what string
	text string
}

// checkComment reports the private references of one comment group.
func checkComment(fset *token.FileSet, cg *ast.CommentGroup, out *[]docFinding) {
	if cg == nil {
		return
	}
	for _, c := range cg.List {
		var what []string
		for _, r := range privateRefs {
			if r.re.MatchString(c.Text) && !slices.Contains(what, r.what) {
				what = append(what, r.what)
			}
		}
		if len(what) > 0 {
			*out = append(*out, docFinding{fset.Position(c.Pos()), strings.Join(what, ", "), strings.TrimSpace(c.Text)})
		}
	}
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(fd *ast.FuncDecl) bool {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return true
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.IsExported()
		default:
			return false
		}
	}
}

// checkType reports the comments of a type's exported fields and methods
// (struct fields, interface methods), which pkg.go.dev shows with it.
func checkType(fset *token.FileSet, t ast.Expr, out *[]docFinding) {
	var fields *ast.FieldList
	switch x := t.(type) {
	case *ast.StructType:
		fields = x.Fields
	case *ast.InterfaceType:
		fields = x.Methods
	default:
		return
	}
	for _, f := range fields.List {
		exported := len(f.Names) == 0 // embedded
		for _, n := range f.Names {
			exported = exported || n.IsExported()
		}
		if !exported {
			continue
		}
		checkComment(fset, f.Doc, out)
		checkComment(fset, f.Comment, out)
		checkType(fset, f.Type, out)
	}
}

// publicDocFindings parses the package in dir (its examples too, which
// pkg.go.dev shows with their comments) and returns the private
// references of its package doc and of the doc comments of its exported
// identifiers.
func publicDocFindings(t *testing.T, dir string) []docFinding {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []docFinding
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, "_test.go") {
			// Examples: their doc and every comment of their body.
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || !strings.HasPrefix(fd.Name.Name, "Example") {
					continue
				}
				checkComment(fset, fd.Doc, &out)
				for _, cg := range f.Comments {
					if cg.Pos() > fd.Body.Pos() && cg.End() < fd.Body.End() {
						checkComment(fset, cg, &out)
					}
				}
			}
			continue
		}
		checkComment(fset, f.Doc, &out)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && exportedRecv(d) {
					checkComment(fset, d.Doc, &out)
					if d.Doc == nil {
						out = append(out, docFinding{fset.Position(d.Pos()), "", d.Name.Name})
					}
				}
			case *ast.GenDecl:
				any := false
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							any = true
							if s.Doc == nil && d.Doc == nil {
								out = append(out, docFinding{fset.Position(s.Pos()), "", s.Name.Name})
							}
							checkComment(fset, s.Doc, &out)
							checkComment(fset, s.Comment, &out)
							checkType(fset, s.Type, &out)
						}
					case *ast.ValueSpec:
						if slices.ContainsFunc(s.Names, (*ast.Ident).IsExported) {
							any = true
							if s.Doc == nil && s.Comment == nil && d.Doc == nil {
								out = append(out, docFinding{fset.Position(s.Pos()), "", s.Names[0].Name})
							}
							checkComment(fset, s.Doc, &out)
							checkComment(fset, s.Comment, &out)
						}
					}
				}
				if any {
					checkComment(fset, d.Doc, &out)
				}
			}
		}
	}
	return out
}

// TestPublicDocsStandAlone fails on an exported function, method, type,
// constant or variable without a doc comment, and on doc comments that
// send a reader of
// pkg.go.dev to this repository's notes: "§" section numbers, docs/ paths,
// the field-failure catalogue and its case numbers, Markdown files. Doc
// comments state the rule and cite the MM2 class, config key, KIP or
// KAFKA issue by name instead. It covers the package docs, every exported
// identifier (with the exported fields and methods of exported types) and
// the examples of the public packages.
func TestPublicDocsStandAlone(t *testing.T) {
	for _, dir := range publicPackages {
		for _, f := range publicDocFindings(t, dir) {
			if f.what == "" {
				t.Errorf("%s: exported %s has no doc comment", f.pos, f.text)
				continue
			}
			t.Errorf("%s: doc comment refers to %s: %s", f.pos, f.what, f.text)
		}
	}
}

// TestPrivateRefsPatterns checks the patterns on comments that must and
// must not be reported.
func TestPrivateRefsPatterns(t *testing.T) {
	for _, tc := range []struct {
		text string
		bad  bool
	}{
		{"// see docs/mm2-compat.md §8.3", true},
		{"// (docs/field-failures.md case B08)", true},
		{"// MM2 fails here (case B25)", true},
		{"// as METRICS.md lists", true},
		{"// follows the kmirror MM2 compatibility specification, sections 1.2, 3", true},
		{"// invariant I1 of the notes", true},
		{"// MM2's MirrorCheckpointTask (KIP-545, KAFKA-15905) with emit.checkpoints.interval.seconds", false},
		{"// header keys and values; MaxBufferedBytes is 32 MiB", false},
		{"// kmirror-provenance, B-trees and B2B", false},
	} {
		bad := false
		for _, r := range privateRefs {
			bad = bad || r.re.MatchString(tc.text)
		}
		if bad != tc.bad {
			t.Errorf("%q: reported %v, want %v", tc.text, bad, tc.bad)
		}
	}
}

// TestLibraryLinksNoPrometheus: a program that imports the library's
// packages, but not mirror/mirrorprom, links neither the Prometheus client
// nor protobuf (the way franz-go keeps kprom apart from kgo).
func TestLibraryLinksNoPrometheus(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		t.Skipf("no go command at %s: %v", goTool, err)
	}
	list := func(pkgs ...string) []string {
		out, err := exec.Command(goTool, append([]string{"list", "-deps"}, pkgs...)...).Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("go list -deps %v: %v\n%s", pkgs, err, ee.Stderr)
			}
			t.Fatalf("go list -deps %v: %v", pkgs, err)
		}
		return strings.Fields(string(out))
	}
	heavy := func(dep string) bool {
		return strings.HasPrefix(dep, "github.com/prometheus/") || strings.HasPrefix(dep, "google.golang.org/protobuf")
	}
	for _, dep := range list("./mirror", "./remoteclusterutils", "./checkpoint", "./heartbeat", "./policy") {
		if heavy(dep) {
			t.Errorf("the library depends on %s", dep)
		}
	}
	if !slices.ContainsFunc(list("./mirror/mirrorprom"), heavy) {
		t.Error("mirror/mirrorprom does not depend on the Prometheus client: is the check above still meaningful?")
	}
}

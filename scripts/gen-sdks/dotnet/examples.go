package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/blang/semver"
	"github.com/hashicorp/hcl/v2"
	"github.com/pulumi/pulumi/pkg/v3/codegen/hcl2/syntax"
	"github.com/pulumi/pulumi/pkg/v3/codegen/pcl"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

// The example programs as scripts/gen-sdks/examples.go reads them ("<Resource>.<slug>.pp", a
// "# <title>" line first), written here in C#: this pkg/v3 binds programs with other calls.
type example struct {
	name   string
	source []byte
}

func readExamples(dir string) ([]example, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.pp"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var found []example
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		_, rest, _ := bytes.Cut(text, []byte("\n"))
		found = append(found, example{name: strings.TrimSuffix(filepath.Base(file), ".pp"), source: rest})
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("no example programs (*.pp) in %s", dir)
	}
	return found, nil
}

// thisPackage loads the package being generated, and no other.
type thisPackage struct{ pkg *schema.Package }

func (l thisPackage) LoadPackage(name string, _ *semver.Version) (*schema.Package, error) {
	if name == l.pkg.Name {
		return l.pkg, nil
	}
	return nil, fmt.Errorf("an example refers to package %q: only %q is loaded", name, l.pkg.Name)
}

func (l thisPackage) LoadPackageV2(_ context.Context, d *schema.PackageDescriptor) (*schema.Package, error) {
	return l.LoadPackage(d.Name, nil)
}

func writeExamples(examples []example, pkg *schema.Package, out, language string,
	generate func(*pcl.Program) (map[string][]byte, hcl.Diagnostics, error),
) error {
	for _, ex := range examples {
		parser := syntax.NewParser()
		if err := parser.ParseFile(bytes.NewReader(ex.source), ex.name+".pp"); err != nil {
			return fmt.Errorf("example %s: %w", ex.name, err)
		}
		program, diags, err := pcl.BindProgram(parser.Files, pcl.Loader(thisPackage{pkg}))
		if err == nil && diags.HasErrors() {
			err = diags
		}
		if err != nil {
			return fmt.Errorf("example %s: %w", ex.name, err)
		}
		files, diags, err := generate(program)
		if err == nil && diags.HasErrors() {
			err = diags
		}
		if err != nil {
			return fmt.Errorf("example %s in %s: %w", ex.name, language, err)
		}
		for file, text := range files {
			path := filepath.Join(out, ex.name, file)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(path, text, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

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

// An example program of the schema's resources, in Pulumi's program language (PCL): a file
// "<Resource>.<slug>.pp" whose first line is "# <title>". Each language's program generator writes
// it as a program of its own (OUT/examples/<Resource>.<slug>/), and scripts/declarations.ts puts
// them into the resource's documentation, as the Registry's pages and the SDKs show examples.
type example struct {
	name   string // "<Resource>.<slug>"
	source []byte // the program, without its title line
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
		first, rest, _ := bytes.Cut(text, []byte("\n"))
		if !bytes.HasPrefix(first, []byte("# ")) {
			return nil, fmt.Errorf("%s: the first line must be \"# <title>\"", file)
		}
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

type programGenerator func(*pcl.Program) (map[string][]byte, hcl.Diagnostics, error)

// writeExamples binds each example against pkg (a property or a type the schema lacks fails here)
// and writes what each generator makes of it into out/<name>/.
func writeExamples(examples []example, pkg *schema.Package, out string, generators map[string]programGenerator) error {
	for _, ex := range examples {
		parser := syntax.NewParser()
		if err := parser.ParseFile(bytes.NewReader(ex.source), ex.name+".pp"); err != nil {
			return fmt.Errorf("example %s: %w", ex.name, err)
		}
		if parser.Diagnostics.HasErrors() {
			return fmt.Errorf("example %s: %w", ex.name, parser.Diagnostics)
		}
		program, diags, err := pcl.BindProgram(parser.Files, thisPackage{pkg})
		if err == nil && diags.HasErrors() {
			err = diags
		}
		if err != nil {
			return fmt.Errorf("example %s: %w", ex.name, err)
		}
		languages := make([]string, 0, len(generators))
		for language := range generators {
			languages = append(languages, language)
		}
		sort.Strings(languages)
		for _, language := range languages {
			files, diags, err := generators[language](program)
			if err == nil && diags.HasErrors() {
				err = diags
			}
			if err != nil {
				return fmt.Errorf("example %s in %s: %w", ex.name, language, err)
			}
			if len(files) != 1 {
				return fmt.Errorf("example %s in %s: %d files, where one was expected", ex.name, language, len(files))
			}
			for file, text := range files {
				if err := writeFile(filepath.Join(out, ex.name, file), text); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func writeFile(file string, text []byte) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, text, 0o644)
}

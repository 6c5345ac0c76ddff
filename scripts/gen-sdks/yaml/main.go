// Command gen-examples-yaml writes the schema's example programs (provider/hosts/plugin/examples,
// Pulumi's program language) as YAML programs, with pulumi-yaml's own program generator, as
// `pulumi convert --language yaml` does. A module of its own: pulumi-yaml v1.25.0 builds only on
// the pkg/v3 it names (v3.206.0), older than the SDK generators' (see scripts/gen-sdks/run).
//
//	gen-examples-yaml -schema provider/hosts/plugin/schema.json -version 0.1.0 -out sdk \
//	  -examples provider/hosts/plugin/examples
//
// writes OUT/examples/<name>/Pulumi.yaml for each example.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/blang/semver"
	yamlgen "github.com/pulumi/pulumi-yaml/pkg/pulumiyaml/codegen"
	"github.com/pulumi/pulumi/pkg/v3/codegen/hcl2/syntax"
	"github.com/pulumi/pulumi/pkg/v3/codegen/pcl"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

// noReferences loads no other package: the schema refers to none.
type noReferences struct{}

func (noReferences) LoadPackage(name string, _ *semver.Version) (*schema.Package, error) {
	return nil, fmt.Errorf("the schema refers to package %q: gen-examples-yaml loads no other package", name)
}

func (noReferences) LoadPackageV2(_ context.Context, d *schema.PackageDescriptor) (*schema.Package, error) {
	return nil, fmt.Errorf("the schema refers to package %q: gen-examples-yaml loads no other package", d.Name)
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

func main() {
	schemaFile := flag.String("schema", "provider/hosts/plugin/schema.json", "the package schema")
	version := flag.String("version", "", "the package's version (required)")
	out := flag.String("out", "sdk", "the folder to write examples/ into")
	examples := flag.String("examples", "provider/hosts/plugin/examples", "the example programs (*.pp)")
	flag.Parse()
	if err := run(*schemaFile, *version, *out, *examples); err != nil {
		fmt.Fprintf(os.Stderr, "gen-examples-yaml: %v\n", err)
		os.Exit(1)
	}
}

func run(schemaFile, version, out, examplesDir string) error {
	if version == "" {
		return errors.New("-version is required")
	}
	raw, err := os.ReadFile(schemaFile)
	if err != nil {
		return err
	}
	var spec schema.PackageSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("%s: %w", schemaFile, err)
	}
	spec.Version = version
	pkg, diags, err := schema.BindSpec(spec, noReferences{}, schema.ValidationOptions{})
	if err == nil && diags.HasErrors() {
		err = diags
	}
	if err != nil {
		return fmt.Errorf("%s: %w", schemaFile, err)
	}

	files, err := filepath.Glob(filepath.Join(examplesDir, "*.pp"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	if len(files) == 0 {
		return fmt.Errorf("no example programs (*.pp) in %s", examplesDir)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".pp")
		text, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		_, source, _ := bytes.Cut(text, []byte("\n")) // the "# <title>" line
		parser := syntax.NewParser()
		if err := parser.ParseFile(bytes.NewReader(source), name+".pp"); err != nil {
			return fmt.Errorf("example %s: %w", name, err)
		}
		program, diags, err := pcl.BindProgram(parser.Files, pcl.Loader(thisPackage{pkg}))
		if err == nil && diags.HasErrors() {
			err = diags
		}
		if err != nil {
			return fmt.Errorf("example %s: %w", name, err)
		}
		generated, diags, err := yamlgen.GenerateProgram(program)
		if err == nil && diags.HasErrors() {
			err = diags
		}
		if err != nil {
			return fmt.Errorf("example %s in YAML: %w", name, err)
		}
		for generatedName, text := range generated {
			path := filepath.Join(out, "examples", name, generatedName)
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

// Command gen-sdks writes the Go and Python SDKs of the provider plugin from its Pulumi package
// schema, with Pulumi's own generators (pkg/v3/codegen/go and codegen/python), called directly:
// `pulumi package gen-sdk` needs the languages' plugins, which cannot be installed here.
//
//	gen-sdks -schema provider/hosts/plugin/schema.json -version 0.1.0 -out sdk \
//	  -examples provider/hosts/plugin/examples
//
// writes OUT/go (a Go module) and OUT/python, each emptied first, and each example program in
// TypeScript, Python and Go (OUT/examples/<name>/). The version is the package's, as the plugin adds
// it to the schema it serves (GetSchema).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"sort"

	"github.com/blang/semver"
	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	nodejsgen "github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	pygen "github.com/pulumi/pulumi/pkg/v3/codegen/python"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

// The name the generated files' headers give as their generator.
const tool = "scripts/gen-sdks"

// noReferences loads no other package: the schema refers to none, and a reference is an error.
type noReferences struct{}

func (noReferences) LoadPackage(name string, _ *semver.Version) (*schema.Package, error) {
	return nil, fmt.Errorf("the schema refers to package %q: gen-sdks loads no other package", name)
}

func (noReferences) LoadPackageV2(_ context.Context, d *schema.PackageDescriptor) (*schema.Package, error) {
	return nil, fmt.Errorf("the schema refers to package %q: gen-sdks loads no other package", d.Name)
}

func main() {
	schemaFile := flag.String("schema", "provider/hosts/plugin/schema.json", "the package schema")
	version := flag.String("version", "", "the package's version (required)")
	out := flag.String("out", "sdk", "the folder to write go/, python/ and examples/ into")
	examples := flag.String("examples", "provider/hosts/plugin/examples", "the example programs (*.pp)")
	what := flag.String("what", "all", `"sdks", "examples" or "all"`)
	readmes := flag.String("readmes", "scripts/gen-sdks/readme", "each SDK's README (go.md, python.md)")
	flag.Parse()
	if err := run(*schemaFile, *version, *out, *examples, *what, *readmes); err != nil {
		fmt.Fprintf(os.Stderr, "gen-sdks: %v\n", err)
		os.Exit(1)
	}
}

func run(schemaFile, version, out, examplesDir, what, readmes string) error {
	if version == "" {
		return errors.New("-version is required")
	}
	if what != "sdks" && what != "examples" && what != "all" {
		return fmt.Errorf(`-what must be "sdks", "examples" or "all", not %q`, what)
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

	// A package for each generator: each imports its language's settings into the one it is given.
	load := func() (*schema.Package, error) {
		return schema.ImportSpec(spec,
			map[string]schema.Language{"go": gogen.Importer, "python": pygen.Importer, "nodejs": nodejsgen.Importer},
			noReferences{}, schema.ValidationOptions{})
	}

	pkg, err := load()
	if err != nil {
		return fmt.Errorf("%s: %w", schemaFile, err)
	}
	if what != "sdks" {
		examples, err := readExamples(examplesDir)
		if err != nil {
			return err
		}
		err = writeExamples(examples, pkg, filepath.Join(out, "examples"), map[string]programGenerator{
			"typescript": nodejsgen.GenerateProgram,
			"python":     pygen.GenerateProgram,
			"go":         gogen.GenerateProgram,
		})
		if err != nil || what == "examples" {
			return err
		}
		if pkg, err = load(); err != nil {
			return err
		}
	}
	goFiles, err := gogen.GeneratePackage(tool, pkg, nil)
	if err != nil {
		return fmt.Errorf("Go SDK: %w", err)
	}
	// The generator writes a go.mod only for a package that declares meta.supportPack, and then one
	// that requires an older Pulumi SDK than this generator's. This one requires this generator's
	// (whose dependencies the module proxy serves); its path is the import path's folder, which
	// holds the root package. `run` completes it with `go mod tidy`.
	info, _ := pkg.Language["go"].(gogen.GoPackageInfo)
	module := info.ModulePath
	if module == "" {
		if info.ImportBasePath == "" {
			return errors.New("the schema sets neither language.go.importBasePath nor modulePath")
		}
		module = path.Dir(info.ImportBasePath)
	}
	sdk, err := pulumiSDKVersion()
	if err != nil {
		return err
	}
	goFiles["go.mod"] = []byte(fmt.Sprintf("module %s\n\ngo 1.25\n\nrequire github.com/pulumi/pulumi/sdk/v3 %s\n", module, sdk))
	if goFiles["README.md"], err = os.ReadFile(filepath.Join(readmes, "go.md")); err != nil {
		return err
	}

	if pkg, err = load(); err != nil {
		return err
	}
	// The README the generator writes into the package, from the one kept for Python users.
	pyReadme, err := os.ReadFile(filepath.Join(readmes, "python.md"))
	if err != nil {
		return err
	}
	pyInfo, _ := pkg.Language["python"].(pygen.PackageInfo)
	pyInfo.Readme = string(pyReadme)
	pkg.Language["python"] = pyInfo
	pyFiles, err := pygen.GeneratePackage(tool, pkg, nil, nil)
	if err != nil {
		return fmt.Errorf("Python SDK: %w", err)
	}

	// pyproject.toml names README.md beside it, where pip and `python -m build` look for it; the
	// generator writes the README only into the package's folder.
	readme, ok := pyFiles[path.Join(pyInfo.PackageName, "README.md")]
	if !ok {
		return fmt.Errorf("Python SDK: no README.md in %s/", pyInfo.PackageName)
	}
	pyFiles["README.md"] = readme

	if err := write(filepath.Join(out, "go"), goFiles); err != nil {
		return err
	}
	return write(filepath.Join(out, "python"), pyFiles)
}

// pulumiSDKVersion is the version of the Pulumi Go SDK this program was built with.
func pulumiSDKVersion() (string, error) {
	if build, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range build.Deps {
			if dep.Path == "github.com/pulumi/pulumi/sdk/v3" {
				return dep.Version, nil
			}
		}
	}
	return "", errors.New("no github.com/pulumi/pulumi/sdk/v3 in this program's build information")
}

// write empties dir and writes files into it, so that a file the generator no longer makes goes.
func write(dir string, files map[string][]byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		file := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(file, files[name], 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("gen-sdks: %d files in %s\n", len(files), dir)
	return nil
}

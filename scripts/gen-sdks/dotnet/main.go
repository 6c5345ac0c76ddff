// Command gen-sdks-dotnet writes the .NET SDK of the provider plugin from its Pulumi package
// schema, with Pulumi's own generator (pkg/v3/codegen/dotnet), called directly, as scripts/gen-sdks/main.go does
// for Go and Python. A module of its own, on an older pkg/v3: codegen/dotnet is not in the newer
// ones (see scripts/gen-sdks/run).
//
//	gen-sdks-dotnet -schema provider/hosts/plugin/schema.json -version 0.1.0 -out sdk \
//	  -examples provider/hosts/plugin/examples
//
// writes OUT/dotnet, emptied first, and each example program in C# (OUT/examples/<name>/). The version is the package's, as the plugin adds it to the
// schema it serves (GetSchema).
package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"

	"github.com/blang/semver"
	dotnetgen "github.com/pulumi/pulumi/pkg/v3/codegen/dotnet"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

// The name the generated files' headers give as their generator.
const tool = "scripts/gen-sdks"

// The generator downloads the package's logo (schema logoUrl) for the NuGet package, and without
// one this generic Pulumi logo. It is served from here, so that generating needs no network and
// always writes the same file: pulumi-logo.png is the logo.png of pkg/v3's own .NET codegen test
// outputs (codegen/testing/test/testdata/*/dotnet/ in v3.106.0, whose schemas set no logoUrl).
const defaultLogoURL = "https://raw.githubusercontent.com/pulumi/pulumi/dbc96206bec722b7791a22ff50e895ab7c0abdc0/sdk/dotnet/pulumi_logo_64x64.png"

//go:embed pulumi-logo.png
var defaultLogo []byte

// logoOnly answers the default logo's address and refuses every other request.
type logoOnly struct{}

func (logoOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.String() != defaultLogoURL {
		return nil, errors.New("gen-sdks-dotnet fetches nothing but the default logo (a schema logoUrl is not supported)")
	}
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"image/png"}}, Body: io.NopCloser(bytes.NewReader(defaultLogo)),
		ContentLength: int64(len(defaultLogo)), Request: req,
	}, nil
}

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
	out := flag.String("out", "sdk", "the folder to write dotnet/ and examples/ into")
	examples := flag.String("examples", "provider/hosts/plugin/examples", "the example programs (*.pp)")
	what := flag.String("what", "all", `"sdks", "examples" or "all"`)
	readmes := flag.String("readmes", "scripts/gen-sdks/readme", "each SDK's README (dotnet.md)")
	flag.Parse()
	if err := run(*schemaFile, *version, *out, *examples, *what, *readmes); err != nil {
		fmt.Fprintf(os.Stderr, "gen-sdks-dotnet: %v\n", err)
		os.Exit(1)
	}
}

// A reference to a resource's property in a description, `{{% ref #/resources/TOKEN/inputProperties/name %}}`,
// which the newer generators write in each language's words: this one predates them.
var propertyRef = regexp.MustCompile(`\{\{% ref #/resources/[^/ ]+/(?:inputProperties|properties)/([A-Za-z0-9]+) %\}\}`)

// csharpNames writes each property reference as C# names the property (PascalCase).
func csharpNames(schemaText []byte) []byte {
	return propertyRef.ReplaceAllFunc(schemaText, func(ref []byte) []byte {
		name := propertyRef.FindSubmatch(ref)[1]
		return append(bytes.ToUpper(name[:1]), name[1:]...)
	})
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
	raw = csharpNames(raw)
	var spec schema.PackageSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("%s: %w", schemaFile, err)
	}
	spec.Version = version

	// This pkg/v3's ImportSpec takes no loader (it would start a plugin host to load a reference):
	// BindSpec takes one, and checks the schema against the metaschema too, as `pulumi package
	// gen-sdk` does. The C# settings are then imported as ImportSpec would.
	pkg, diags, err := schema.BindSpec(spec, noReferences{}, schema.ValidationOptions{})
	if err == nil && diags.HasErrors() {
		err = diags
	}
	if err != nil {
		return fmt.Errorf("%s: %w", schemaFile, err)
	}
	if err := pkg.ImportLanguages(map[string]schema.Language{"csharp": dotnetgen.Importer}); err != nil {
		return fmt.Errorf("%s: %w", schemaFile, err)
	}

	if what != "sdks" {
		examples, err := readExamples(examplesDir)
		if err != nil {
			return err
		}
		err = writeExamples(examples, pkg, filepath.Join(out, "examples"), "csharp", dotnetgen.GenerateProgram)
		if err != nil || what == "examples" {
			return err
		}
	}
	http.DefaultTransport = logoOnly{}
	files, err := dotnetgen.GeneratePackage(tool, pkg, nil, nil)
	if err != nil {
		return fmt.Errorf(".NET SDK: %w", err)
	}
	// The package's README (NuGet shows it), the one kept for .NET users, in place of the schema's description.
	if files["README.md"], err = os.ReadFile(filepath.Join(readmes, "dotnet.md")); err != nil {
		return err
	}
	return write(filepath.Join(out, "dotnet"), files)
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

// Command pluginrelease builds kubectl-lin for each platform into the
// archives that krew installs, and writes the krew manifest for them from
// the template plugins/lin.yaml: the version, and each archive's sha256.
// `make plugin` runs it. The archives are reproducible: the same source,
// Go and version give the same bytes, so their sums can be checked by
// anyone who builds them again.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/template"

	"golang.org/x/mod/semver"
)

// platform is one os/arch that the plugin is built for.
type platform struct {
	OS, Arch string
	// Archive is the file name of its archive.
	Archive string
}

func main() {
	version := flag.String("version", "", "The release's version, vX.Y.Z.")
	platforms := flag.String("platforms", "linux/amd64 linux/arm64 darwin/amd64 darwin/arm64", "The os/arch pairs to build, space-separated.")
	out := flag.String("out", "bin/plugin", "Where to write the archives and lin.yaml.")
	manifest := flag.String("manifest", "plugins/lin.yaml", "The template of the krew manifest.")
	flag.Parse()
	if err := run(*version, strings.Fields(*platforms), *out, *manifest); err != nil {
		fmt.Fprintln(os.Stderr, "pluginrelease:", err)
		os.Exit(1)
	}
}

// run builds every platform's archive into out, then writes out/lin.yaml.
func run(version string, platforms []string, out, manifest string) error {
	// krew wants semantic versions; git describe of a commit past a tag or
	// of a dirty tree is not a release.
	if !semver.IsValid(version) || strings.HasSuffix(version, "-dirty") || semver.Build(version) != "" {
		return fmt.Errorf("-version %q: want a release's version, vX.Y.Z (make plugin VERSION=vX.Y.Z)", version)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	sums := map[string]string{}
	var ps []platform
	for _, p := range platforms {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok {
			return fmt.Errorf("-platforms: %q is not os/arch", p)
		}
		pl := platform{OS: goos, Arch: goarch, Archive: fmt.Sprintf("kubectl-lin_%s_%s.tar.gz", goos, goarch)}
		sum, err := buildArchive(pl, version, filepath.Join(out, pl.Archive))
		if err != nil {
			return err
		}
		sums[pl.Archive] = sum
		ps = append(ps, pl)
		fmt.Printf("%s  %s\n", sum, filepath.Join(out, pl.Archive))
	}
	tmpl, err := template.New(filepath.Base(manifest)).Funcs(template.FuncMap{
		"sha256": func(archive string) (string, error) {
			if s, ok := sums[archive]; ok {
				return s, nil
			}
			return "", fmt.Errorf("no archive %s was built", archive)
		},
	}).ParseFiles(manifest)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, struct {
		Version   string
		Platforms []platform
	}{version, ps}); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "lin.yaml"), b.Bytes(), 0o644)
}

// buildArchive builds the plugin for p, stamped with version, and writes it
// as the only file of a tar.gz at path, with no time, owner or name that
// would change from one build to the next. It returns the archive's sha256.
func buildArchive(p platform, version, path string) (string, error) {
	dir, err := os.MkdirTemp("", "kubectl-lin-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "kubectl-lin")
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -X main.version="+version, "-o", bin, "./cmd/kubectl-lin")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
	if output, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building for %s/%s: %w\n%s", p.OS, p.Arch, err, output)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: "kubectl-lin", Mode: 0o755, Size: int64(len(data)), Format: tar.FormatUSTAR}); err != nil {
		return "", err
	}
	if _, err := tw.Write(data); err != nil {
		return "", err
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := gz.Close(); err != nil {
		return "", err
	}
	sum := sha256.Sum256(b.Bytes())
	return hex.EncodeToString(sum[:]), os.WriteFile(path, b.Bytes(), 0o644)
}

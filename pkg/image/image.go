// Package image builds the operator's OCI image without a container engine:
// the static binary of each platform in one layer on an empty base, with an
// /etc/passwd that names the nonroot user, in an index of every platform.
package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// User is the user and group the operator runs as: distroless' nonroot,
	// by number, so that runAsNonRoot can check it.
	User = "65532:65532"
	// Entrypoint is where the binary is in the image.
	Entrypoint = "/lin-operator"
)

// passwd and group name the nonroot user; the binary needs nothing else of
// a system (it reaches the API server with the cluster's CA, not the system roots).
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group  = "root:x:0:\nnonroot:x:65532:\n"
)

// Options say what goes into the image.
type Options struct {
	// Binaries maps a platform ("linux/amd64") to the path of its static binary.
	Binaries map[string]string
	// Source, Version and Revision become the OCI labels
	// org.opencontainers.image.{source,version,revision}.
	Source, Version, Revision string
	// Created is the time the image says it was made; files carry it too.
	// The zero time keeps the image reproducible: the same binaries make the
	// same digest.
	Created time.Time
}

// Build returns the index of one image per platform of opts.Binaries.
func Build(opts Options) (v1.ImageIndex, error) {
	if len(opts.Binaries) == 0 {
		return nil, fmt.Errorf("no binary given")
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, platform := range sortedKeys(opts.Binaries) {
		p, err := v1.ParsePlatform(platform)
		if err != nil {
			return nil, fmt.Errorf("platform %q: %w", platform, err)
		}
		img, err := platformImage(opts, opts.Binaries[platform], p)
		if err != nil {
			return nil, fmt.Errorf("image for %s: %w", platform, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}
	return idx, nil
}

// Platform returns the image of one of opts.Binaries' platforms, such as
// "linux/amd64", alone: what a node of that platform runs, for a container
// runtime to import without a registry (WriteArchive).
func Platform(opts Options, platform string) (v1.Image, error) {
	binary, ok := opts.Binaries[platform]
	if !ok {
		return nil, fmt.Errorf("no binary for platform %q", platform)
	}
	p, err := v1.ParsePlatform(platform)
	if err != nil {
		return nil, fmt.Errorf("platform %q: %w", platform, err)
	}
	return platformImage(opts, binary, p)
}

// platformImage is the image of one platform: a layer holding the binary
// and the user's files, and a config that runs the binary as that user.
func platformImage(opts Options, binary string, p *v1.Platform) (v1.Image, error) {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	return fromFiles(opts.Created, p, []file{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: Entrypoint[1:], mode: 0o755, data: bin},
	}, func(c *v1.Config) {
		c.Entrypoint = []string{Entrypoint}
		c.User = User
		c.Labels = map[string]string{
			"org.opencontainers.image.source":   opts.Source,
			"org.opencontainers.image.version":  opts.Version,
			"org.opencontainers.image.revision": opts.Revision,
		}
	})
}

// Static returns an image of one static binary at entrypoint, run as user
// (a "uid:gid", or empty for root), on an empty base: the shape of the small
// images that tests run, such as a pause image. Each of links is a name, in
// the entrypoint's folder, of a symbolic link to it, as a multi-call binary
// like busybox needs.
func Static(binary, entrypoint, user string, p *v1.Platform, links ...string) (v1.Image, error) {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	entry := strings.TrimPrefix(entrypoint, "/")
	var files []file
	if dir := path.Dir(entry); dir != "." {
		files = append(files, file{name: dir + "/", mode: 0o755, dir: true})
	}
	files = append(files, file{name: entry, mode: 0o755, data: bin})
	for _, l := range links {
		files = append(files, file{name: path.Join(path.Dir(entry), l), mode: 0o777, link: path.Base(entry)})
	}
	return fromFiles(time.Time{}, p, files, func(c *v1.Config) {
		c.Entrypoint = []string{entrypoint}
		c.User = user
	})
}

// fromFiles is an image of p with one layer of files, dated created, whose
// run configuration configure sets.
func fromFiles(created time.Time, p *v1.Platform, files []file, configure func(*v1.Config)) (v1.Image, error) {
	layerTar, err := layerFiles(created, files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(mutate.ConfigMediaType(empty.Image, types.OCIConfigJSON), types.OCIManifestSchema1)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Variant = p.OS, p.Architecture, p.Variant
	cfg.Created = v1.Time{Time: created}
	configure(&cfg.Config)
	return mutate.ConfigFile(img, cfg)
}

// file is one entry of the layer: a folder, a symbolic link to link, or a
// regular file holding data.
type file struct {
	name string
	mode int64
	dir  bool
	link string
	data []byte
}

// layerFiles writes files into a tar, owned by root and dated at created.
func layerFiles(created time.Time, files []file) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: created, Typeflag: tar.TypeReg, Size: int64(len(f.data)), Format: tar.FormatPAX}
		switch {
		case f.dir:
			h.Typeflag, h.Size = tar.TypeDir, 0
		case f.link != "":
			h.Typeflag, h.Size, h.Linkname = tar.TypeSymlink, 0, f.link
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// sortedKeys returns the keys of m in order, so that the index lists the
// platforms in one order and its digest depends on the binaries alone.
func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

// WriteLayout writes idx as an OCI image layout into dir, replacing what
// was there.
func WriteLayout(dir string, idx v1.ImageIndex) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	_, err := layout.Write(dir, idx)
	return err
}

// WriteArchive writes img, tagged ref, as a docker-archive tarball at path:
// what `ctr images import` and `docker load` read.
func WriteArchive(path, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image %q: %w", ref, err)
	}
	return tarball.WriteToFile(path, tag, img)
}

// Push pushes idx to the registry that ref names, with the credentials of
// the user's Docker config, if any (docker login, or a credential helper).
func Push(ref string, idx v1.ImageIndex, opts ...remote.Option) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return fmt.Errorf("image %q: %w", ref, err)
	}
	return remote.WriteIndex(r, idx, append([]remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)...)
}

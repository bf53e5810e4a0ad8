// Command image builds the operator's OCI image from static binaries, with
// no container engine (pkg/image), and writes it as an OCI image layout or
// pushes it to a registry. `make image` builds the binaries with the
// Makefile's GO_BUILD and runs it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"lin.dev/lin-operator/pkg/image"
)

func main() {
	binaries := map[string]string{}
	flag.Func("binary", "A platform and its binary, as linux/amd64=bin/linux/amd64/lin-operator; once per platform.", func(v string) error {
		platform, path, ok := strings.Cut(v, "=")
		if !ok || platform == "" || path == "" {
			return errors.New("want platform=path")
		}
		binaries[platform] = path
		return nil
	})
	var opts image.Options
	flag.StringVar(&opts.Source, "source", "https://github.com/lin-dev/lin-operator", "The org.opencontainers.image.source label.")
	flag.StringVar(&opts.Version, "version", "dev", "The org.opencontainers.image.version label.")
	flag.StringVar(&opts.Revision, "revision", "", "The org.opencontainers.image.revision label: the commit.")
	out := flag.String("out", "bin/image", "The OCI image layout to write, when -image is empty.")
	ref := flag.String("image", "", "An image reference to push to (registry/repository:tag) instead of writing -out.")
	flag.Parse()
	opts.Binaries = binaries
	if err := run(opts, *out, *ref); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// run builds the index, writes or pushes it, and prints its digest and the
// digest and size of each platform's image.
func run(opts image.Options, out, ref string) error {
	idx, err := image.Build(opts)
	if err != nil {
		return err
	}
	where := out
	if ref != "" {
		where = ref
		err = image.Push(ref, idx)
	} else {
		err = image.WriteLayout(out, idx)
	}
	if err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s: index %s\n", where, digest)
	manifest, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, d := range manifest.Manifests {
		size, err := imageSize(idx, d)
		if err != nil {
			return err
		}
		fmt.Printf("  %s: %s, %d bytes compressed\n", d.Platform, d.Digest, size)
	}
	return nil
}

// imageSize is the compressed size of the image d names: manifest, config
// and layers.
func imageSize(idx v1.ImageIndex, d v1.Descriptor) (int64, error) {
	img, err := idx.Image(d.Digest)
	if err != nil {
		return 0, err
	}
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	size := d.Size + m.Config.Size
	for _, l := range m.Layers {
		size += l.Size
	}
	return size, nil
}

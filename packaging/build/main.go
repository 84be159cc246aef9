// Command build makes hora's packages: `go run ./packaging/build -out dist
// deb rpm` (what `make deb rpm` runs). It builds hora and horad for
// packaging, then the .deb and .rpm files of hora-client, hora-server and
// hora-node into -out. The version comes from `git describe`, every time
// stamp from SOURCE_DATE_EPOCH (default: the commit's time), so the same
// commit gives the same bytes.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"hora/packaging"
)

func main() {
	out := flag.String("out", "dist", "output `DIR` (git-ignored)")
	root := flag.String("root", ".", "repository `DIR`")
	version := flag.String("version", "", "package version (default: from git describe)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./packaging/build [-out DIR] [-version V] deb|rpm ...")
		flag.PrintDefaults()
	}
	flag.Parse()
	formats := flag.Args()
	if len(formats) == 0 {
		formats = []string{"deb", "rpm"}
	}
	if err := run(*root, *out, *version, formats); err != nil {
		fmt.Fprintln(os.Stderr, "packaging: "+err.Error())
		os.Exit(1)
	}
}

func run(root, out, version string, formats []string) error {
	v, commit, epoch, err := packaging.GitVersion(root)
	if err != nil {
		return err
	}
	if version != "" {
		v = version
	}
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
		}
		epoch = time.Unix(sec, 0).UTC()
	}
	bin := filepath.Join(out, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	b, err := packaging.BuildBinaries(root, bin, v)
	if err != nil {
		return err
	}
	paths, err := packaging.Build(packaging.Options{Root: root, Out: out, Version: v, Commit: commit,
		Epoch: epoch, Hora: b.Hora, HoraSim: b.HoraSim, Horad: b.Horad, Formats: formats})
	if err != nil {
		return err
	}
	for _, p := range paths {
		fmt.Println(p)
	}
	return nil
}

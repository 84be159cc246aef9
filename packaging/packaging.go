// Package packaging builds hora's .deb and .rpm packages with nfpm, from Go,
// so that packaging needs nothing but the module proxy (packaging/build is
// the command `make deb rpm` runs). Three packages:
//
//   - hora-client: /usr/bin/hora and its command names (packaging/commands)
//     as symlinks, the section-1 man pages and the shell completions;
//   - hora-server: /usr/sbin/horad, horad.service and horad.socket,
//     /etc/hora/hora.toml as a conffile, horad.8 and hora.toml.5;
//   - hora-node: nothing but dependencies and a README: a node reached over
//     SSH needs only sshd, a POSIX shell and util-linux (docs/packaging.md).
//
// Builds are reproducible: every timestamp is SOURCE_DATE_EPOCH (the commit
// time), man pages are gzipped without name or time, and nfpm sorts the
// archive members; the same inputs give the same bytes (packaging_test.go).
package packaging

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager
)

// Maintainer is the Maintainer/Packager field of every package.
const Maintainer = "hora developers <hora-dev@example.org>"

// Conflicting are the client packages of Slurm and PBS whose commands
// hora-client installs under the same names in /usr/bin: hora-client
// declares Conflicts with them rather than replacing their files silently
// or juggling alternatives (docs/packaging.md says why).
var Conflicting = map[string][]string{
	"deb": {"slurm-client", "openpbs-client", "torque-client"},
	"rpm": {"slurm", "openpbs-client", "torque-client"},
}

// Options says what to build from where.
type Options struct {
	Root    string    // repository root (man/, contrib/, packaging/)
	Out     string    // output directory for the packages and the staging tree
	Version string    // package version, see Version
	Commit  string    // for the changelog entry
	Epoch   time.Time // every timestamp inside the packages
	Hora    string    // built client binary
	HoraSim string    // built simulator (hora replay/compare exec it)
	Horad   string    // built daemon binary
	Formats []string  // "deb", "rpm"
}

// Commands reads packaging/commands: the names the client binary is
// installed under.
func Commands(root string) ([]string, error) {
	f, err := os.Open(filepath.Join(root, "packaging", "commands"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || l[0] == '#' {
			continue
		}
		out = append(out, l)
	}
	return out, sc.Err()
}

// Version turns `git describe --tags --long --always --dirty --match 'v[0-9]*'`
// into a version that dpkg and rpm both order by history: v1.2.3-4-gabc →
// 1.2.3+4.gabc; without a tag (describe gives only the hash) the commit
// count stands in: 0.0.0+<count>.gabc. A dirty tree adds ".dirty".
func Version(describe string, count int) string {
	d := strings.TrimSpace(describe)
	dirty := strings.HasSuffix(d, "-dirty")
	d = strings.TrimSuffix(d, "-dirty")
	var v string
	parts := strings.Split(d, "-")
	if n := len(parts); n >= 3 && strings.HasPrefix(parts[0], "v") && strings.HasPrefix(parts[n-1], "g") {
		base := strings.TrimPrefix(strings.Join(parts[:n-2], "-"), "v")
		base = strings.ReplaceAll(base, "-", "~") // v1.0-rc1 sorts before 1.0
		v = base + "+" + parts[n-2] + "." + parts[n-1]
	} else {
		v = "0.0.0+" + strconv.Itoa(count) + ".g" + d
	}
	if dirty {
		v += ".dirty"
	}
	return v
}

// GitVersion asks git for the describe string, the commit count, the commit
// hash and the commit time (the default SOURCE_DATE_EPOCH).
func GitVersion(root string) (version, commit string, epoch time.Time, err error) {
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out)), nil
	}
	desc, err := git("describe", "--tags", "--long", "--always", "--dirty", "--match", "v[0-9]*")
	if err != nil {
		return "", "", time.Time{}, err
	}
	cnt, err := git("rev-list", "--count", "HEAD")
	if err != nil {
		return "", "", time.Time{}, err
	}
	n, _ := strconv.Atoi(cnt)
	commit, err = git("rev-parse", "--short=12", "HEAD")
	if err != nil {
		return "", "", time.Time{}, err
	}
	ct, err := git("log", "-1", "--format=%ct")
	if err != nil {
		return "", "", time.Time{}, err
	}
	sec, _ := strconv.ParseInt(ct, 10, 64)
	return Version(desc, n), commit, time.Unix(sec, 0).UTC(), nil
}

// Binaries are the three programs the packages hold.
type Binaries struct{ Hora, HoraSim, Horad string }

// BuildBinaries builds hora, hora-sim and horad for packaging: static,
// stripped, without paths or build ids that differ between machines.
func BuildBinaries(root, dir, version string) (Binaries, error) {
	ldflags := "-s -w -buildid= -X hora/controller.Version=" + version + " -X main.version=" + version
	for _, b := range []string{"hora", "hora-sim", "horad"} {
		cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-tags", "urfave_cli_no_docs",
			"-ldflags", ldflags, "-o", filepath.Join(dir, b), "./cmd/"+b)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return Binaries{}, fmt.Errorf("go build ./cmd/%s: %w", b, err)
		}
	}
	return Binaries{filepath.Join(dir, "hora"), filepath.Join(dir, "hora-sim"), filepath.Join(dir, "horad")}, nil
}

// Build writes one package per format and package into o.Out and returns
// their paths.
func Build(o Options) ([]string, error) {
	stage := filepath.Join(o.Out, "stage")
	if err := os.RemoveAll(stage); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(stage, 0o755); err != nil {
		return nil, err
	}
	infos, err := describe(o, stage)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, format := range o.Formats {
		pkgr, err := nfpm.Get(format)
		if err != nil {
			return nil, err
		}
		for _, base := range infos {
			info := *base
			info.Contents = nil
			for _, c := range base.Contents {
				if c.Packager == "" || c.Packager == format {
					cc := *c
					fi := *c.FileInfo
					cc.FileInfo = &fi
					info.Contents = append(info.Contents, &cc)
				}
			}
			info.Conflicts = nil
			if info.Name == "hora-client" {
				info.Conflicts = Conflicting[format]
			}
			if info.Name == "hora-server" && format == "rpm" {
				info.Scripts = rpmScripts(o.Root)
				// init-system-helpers is Debian's; RPM systems have systemctl.
				info.Depends = []string{"systemd"}
				info.Recommends = []string{"hora-client = " + o.Version}
			}
			in := nfpm.WithDefaults(&info)
			if err := nfpm.PrepareForPackager(in, format); err != nil {
				return nil, fmt.Errorf("%s %s: %w", info.Name, format, err)
			}
			name := pkgr.ConventionalFileName(in)
			path := filepath.Join(o.Out, name)
			f, err := os.Create(path)
			if err != nil {
				return nil, err
			}
			err = pkgr.Package(in, f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", info.Name, format, err)
			}
			out = append(out, path)
		}
	}
	return out, nil
}

// describe lays out the three packages.
func describe(o Options, stage string) ([]*nfpm.Info, error) {
	cmds, err := Commands(o.Root)
	if err != nil {
		return nil, err
	}
	mt := o.Epoch.UTC()
	file := func(src, dst string, mode os.FileMode) *files.Content {
		return &files.Content{Source: src, Destination: dst, Type: files.TypeFile,
			FileInfo: &files.ContentFileInfo{Mode: mode, MTime: mt, Owner: "root", Group: "root"}}
	}
	link := func(target, dst string) *files.Content {
		return &files.Content{Source: target, Destination: dst, Type: files.TypeSymlink,
			FileInfo: &files.ContentFileInfo{Mode: 0o777, MTime: mt, Owner: "root", Group: "root"}}
	}
	conf := func(src, dst string) *files.Content {
		return &files.Content{Source: src, Destination: dst, Type: files.TypeConfigNoReplace,
			FileInfo: &files.ContentFileInfo{Mode: 0o644, MTime: mt, Owner: "root", Group: "root"}}
	}
	root := func(p ...string) string { return filepath.Join(append([]string{o.Root}, p...)...) }

	// Per-package documentation Debian requires: copyright and changelog.
	docs := func(pkg string) ([]*files.Content, error) {
		dir := filepath.Join(stage, pkg)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		cl := fmt.Sprintf("hora (%s) unstable; urgency=medium\n\n  * Built from git commit %s.\n\n -- %s  %s\n",
			o.Version, o.Commit, Maintainer, mt.Format("Mon, 02 Jan 2006 15:04:05 -0700"))
		if err := writeGzip(filepath.Join(dir, "changelog.gz"), []byte(cl)); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, "copyright"), []byte(copyright(mt.Year())), 0o644); err != nil {
			return nil, err
		}
		d := "/usr/share/doc/" + pkg + "/"
		return []*files.Content{
			file(filepath.Join(dir, "changelog.gz"), d+"changelog.gz", 0o644),
			file(filepath.Join(dir, "copyright"), d+"copyright", 0o644),
		}, nil
	}
	overrides := func(pkg string) (*files.Content, error) {
		src := root("packaging", "lintian", pkg)
		if _, err := os.Stat(src); err != nil {
			return nil, nil
		}
		c := file(src, "/usr/share/lintian/overrides/"+pkg, 0o644)
		c.Packager = "deb"
		return c, nil
	}

	// hora-client
	// hora replay/compare exec hora-sim from /usr/libexec/hora (cmd/hora/replay.go).
	client := []*files.Content{file(o.Hora, "/usr/bin/hora", 0o755), file(o.HoraSim, "/usr/libexec/hora/hora-sim", 0o755)}
	for _, c := range cmds {
		client = append(client, link("hora", "/usr/bin/"+c))
	}
	mans, err := manPages(root("man"), filepath.Join(stage, "man"))
	if err != nil {
		return nil, err
	}
	var serverMans []*files.Content
	for _, m := range mans {
		c := file(m.staged, m.dst, 0o644)
		if m.section == "1" {
			client = append(client, c)
		} else {
			serverMans = append(serverMans, c)
		}
	}
	comps, err := completions(root("contrib", "completions"), cmds)
	if err != nil {
		return nil, err
	}
	for _, c := range comps {
		if c.link != "" {
			client = append(client, link(c.link, c.dst))
		} else {
			client = append(client, file(c.src, c.dst, 0o644))
		}
	}

	// hora-server
	server := []*files.Content{
		file(o.Horad, "/usr/sbin/horad", 0o755),
		file(root("contrib", "systemd", "horad.service"), "/usr/lib/systemd/system/horad.service", 0o644),
		file(root("contrib", "systemd", "horad.socket"), "/usr/lib/systemd/system/horad.socket", 0o644),
		conf(root("packaging", "etc", "hora.toml"), "/etc/hora/hora.toml"),
		file(root("contrib", "hora.toml.example"), "/usr/share/doc/hora-server/examples/hora.toml.example", 0o644),
		file(root("docs", "operations.md"), "/usr/share/doc/hora-server/operations.md", 0o644),
	}
	server = append(server, serverMans...)

	// hora-node
	node := []*files.Content{file(root("packaging", "node", "README"), "/usr/share/doc/hora-node/README", 0o644)}

	pkgs := []struct {
		name, summary, desc string
		contents            []*files.Content
		o                   nfpm.Overridables
	}{
		{"hora-client", "Slurm- and PBS-compatible commands of the hora batch system",
			"The one hora client binary, installed as sbatch, srun, salloc, squeue,\n" +
				"scancel, sinfo, scontrol, sacct and the PBS commands qsub, qstat, qdel\n" +
				"and others. It talks to horad over the Unix socket /run/hora/horad.sock.",
			client, nfpm.Overridables{}},
		{"hora-server", "hora batch controller daemon (horad) with deadline guarantees",
			"horad schedules batch jobs submitted with the Slurm- and PBS-compatible\n" +
				"commands of hora-client onto local or SSH-reached nodes, keeps every job\n" +
				"in one SQLite file, and admits deadline jobs only when it can guarantee\n" +
				"them. Started by systemd through horad.socket.",
			server, nfpm.Overridables{
				Depends:    []string{"init-system-helpers (>= 1.54~)"},
				Recommends: []string{"systemd", "hora-client (= " + o.Version + ")", "openssh-client"},
			}},
		{"hora-node", "dependencies of a node that hora runs jobs on over SSH",
			"A node that horad reaches over SSH needs no hora software: each job\n" +
				"ships its own small shell wrapper. This package pulls in what such a\n" +
				"node must have beyond the essential util-linux and coreutils: the\n" +
				"OpenSSH server.",
			node, nfpm.Overridables{Depends: []string{"openssh-server"}}},
	}
	var infos []*nfpm.Info
	for _, p := range pkgs {
		d, err := docs(p.name)
		if err != nil {
			return nil, err
		}
		contents := append(append([]*files.Content{}, p.contents...), d...)
		if ov, err := overrides(p.name); err != nil {
			return nil, err
		} else if ov != nil {
			contents = append(contents, ov)
		}
		info := &nfpm.Info{
			Name: p.name, Arch: runtime.GOARCH, Platform: "linux",
			Version: o.Version, VersionSchema: "none", Release: "",
			Section: "admin", Priority: "optional", Maintainer: Maintainer, Vendor: "hora",
			Homepage: "https://example.org/hora", License: "unspecified",
			Description:  p.summary + "\n" + p.desc,
			MTime:        mt,
			Overridables: p.o,
		}
		info.Contents = contents
		info.Umask = 0o022
		info.RPM.Summary = p.summary
		info.RPM.Group = "System Environment/Daemons"
		info.RPM.BuildHost = "hora-build"
		info.RPM.Packager = Maintainer
		if p.name == "hora-server" {
			s := func(n string) string { return root("packaging", "scripts", n) }
			info.Overridables.Scripts.PostInstall = s("server-postinst.deb.sh")
			info.Overridables.Scripts.PreRemove = s("server-prerm.deb.sh")
			info.Overridables.Scripts.PostRemove = s("server-postrm.deb.sh")
		}
		if p.name == "hora-node" {
			info.Arch = "all"
		}
		infos = append(infos, info)
	}
	return infos, nil
}

// rpmScripts are the RPM variants of hora-server's maintainer scripts; the
// deb ones rely on deb-systemd-helper, which RPM systems lack.
func rpmScripts(root string) nfpm.Scripts {
	s := func(n string) string { return filepath.Join(root, "packaging", "scripts", n) }
	return nfpm.Scripts{PostInstall: s("server-post.rpm.sh"), PreRemove: s("server-preun.rpm.sh"),
		PostRemove: s("server-postun.rpm.sh")}
}

type manPage struct{ staged, dst, section string }

// manPages gzips every man/<name>.<section> into stage (gzip -9n: no name,
// no time) for /usr/share/man/man<section>/.
func manPages(dir, stage string) ([]manPage, error) {
	ents, err := os.ReadDir(dir)
	if errorsIsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(stage, 0o755); err != nil {
		return nil, err
	}
	var out []manPage
	for _, e := range ents {
		name := e.Name()
		ext := filepath.Ext(name)
		if e.IsDir() || len(ext) != 2 || ext[1] < '1' || ext[1] > '8' {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		staged := filepath.Join(stage, name+".gz")
		if err := writeGzip(staged, b); err != nil {
			return nil, err
		}
		sec := ext[1:]
		out = append(out, manPage{staged, "/usr/share/man/man" + sec + "/" + name + ".gz", sec})
	}
	return out, nil
}

type completion struct{ src, link, dst string }

// completions maps contrib/completions/ onto the directories each shell
// loads from: bash and fish by command name (a completion written for hora
// is linked under every command name), zsh's vendor-completions (its
// #compdef line names the commands). Files are recognised by their directory (bash/,
// zsh/, fish/) or their extension (.bash, .zsh or a leading _, .fish).
func completions(dir string, cmds []string) ([]completion, error) {
	var out []completion
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errorsIsNotExist(err) && p == dir {
				return fs.SkipDir
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		base := filepath.Base(p)
		shell := ""
		switch {
		case strings.HasPrefix(rel, "bash/") || strings.HasSuffix(base, ".bash"):
			shell = "bash"
		case strings.HasPrefix(rel, "zsh/") || strings.HasSuffix(base, ".zsh") || strings.HasPrefix(base, "_"):
			shell = "zsh"
		case strings.HasPrefix(rel, "fish/") || strings.HasSuffix(base, ".fish"):
			shell = "fish"
		default:
			return nil
		}
		name := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(base, ".bash"), ".zsh"), ".fish")
		name = strings.TrimPrefix(name, "_")
		switch shell {
		case "bash":
			dst := "/usr/share/bash-completion/completions/" + name
			out = append(out, completion{src: p, dst: dst})
			if name == "hora" {
				for _, c := range cmds {
					if _, err := os.Stat(filepath.Join(filepath.Dir(p), c+filepath.Ext(base))); err == nil {
						continue // the command has a file of its own
					}
					out = append(out, completion{link: "hora", dst: "/usr/share/bash-completion/completions/" + c})
				}
			}
		case "zsh":
			out = append(out, completion{src: p, dst: "/usr/share/zsh/vendor-completions/_" + name})
		case "fish":
			// fish autoloads <command>.fish: a file for hora is linked
			// under every command name, as for bash.
			out = append(out, completion{src: p, dst: "/usr/share/fish/vendor_completions.d/" + name + ".fish"})
			if name == "hora" {
				for _, c := range cmds {
					if _, err := os.Stat(filepath.Join(filepath.Dir(p), c+".fish")); err == nil {
						continue
					}
					out = append(out, completion{link: "hora.fish", dst: "/usr/share/fish/vendor_completions.d/" + c + ".fish"})
				}
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].dst < out[j].dst })
	return out, err
}

func errorsIsNotExist(err error) bool { return err != nil && os.IsNotExist(err) }

// writeGzip writes b gzipped at the best level with no file name and a zero
// time in the header, as `gzip -9n` does, so the bytes depend on b alone.
func writeGzip(path string, b []byte) error {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(b); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

func copyright(year int) string {
	return fmt.Sprintf(`Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: hora
Upstream-Contact: %s
Comment: hora's repository states no license yet; until it does, these
 packages are for the sites that build them from the repository.

Files: *
Copyright: %d hora developers
License: unspecified
 The hora repository does not state a license. Redistribution terms are
 those agreed with its developers.
`, Maintainer, year)
}

package packaging

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestVersion(t *testing.T) {
	for _, tc := range []struct {
		describe string
		count    int
		want     string
	}{
		{"v1.2.3-0-g0123abc", 9, "1.2.3+0.g0123abc"},
		{"v1.2.3-14-g0123abc", 9, "1.2.3+14.g0123abc"},
		{"v1.2.3-14-g0123abc-dirty", 9, "1.2.3+14.g0123abc.dirty"},
		{"v2.0-rc1-3-gfeed", 9, "2.0~rc1+3.gfeed"},
		{"03403df", 330, "0.0.0+330.g03403df"},
		{"03403df-dirty", 330, "0.0.0+330.g03403df.dirty"},
	} {
		if got := Version(tc.describe, tc.count); got != tc.want {
			t.Errorf("Version(%q, %d) = %q, want %q", tc.describe, tc.count, got, tc.want)
		}
	}
	// dpkg must order history: a later commit is a newer version.
	if _, err := exec.LookPath("dpkg"); err == nil {
		older, newer := Version("03403df", 330), Version("1a2b3c4", 331)
		if err := exec.Command("dpkg", "--compare-versions", newer, "gt", older).Run(); err != nil {
			t.Errorf("dpkg does not order %s after %s", newer, older)
		}
	}
}

// build makes the binaries and the packages from scratch into dir, as `make
// deb rpm` does, with a fixed SOURCE_DATE_EPOCH.
func build(t *testing.T, dir string, formats ...string) []string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	b, err := BuildBinaries(root, dir, "1.0.0+test")
	if err != nil {
		t.Fatal(err)
	}
	paths, err := Build(Options{Root: root, Out: dir, Version: "1.0.0+test", Commit: "0123456789ab",
		Epoch: time.Unix(1700000000, 0), Hora: b.Hora, HoraSim: b.HoraSim, Horad: b.Horad, Formats: formats})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func find(t *testing.T, paths []string, prefix, suffix string) string {
	t.Helper()
	for _, p := range paths {
		if b := filepath.Base(p); strings.HasPrefix(b, prefix) && strings.HasSuffix(b, suffix) {
			return p
		}
	}
	t.Fatalf("no %s*%s among %v", prefix, suffix, paths)
	return ""
}

// TestReproducible builds everything twice, binaries included, and wants
// the same bytes.
func TestReproducible(t *testing.T) {
	a := build(t, t.TempDir(), "deb", "rpm")
	b := build(t, t.TempDir(), "deb", "rpm")
	if len(a) != len(b) || len(a) != 6 {
		t.Fatalf("built %d and %d packages, want 6 each", len(a), len(b))
	}
	for i := range a {
		x, err := os.ReadFile(a[i])
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(b[i])
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(a[i]) != filepath.Base(b[i]) || !bytes.Equal(x, y) {
			t.Errorf("%s and %s differ", a[i], b[i])
		}
	}
}

// TestDebContents checks what the .debs hold and declare with dpkg-deb,
// and that lintian finds no error in them.
func TestDebContents(t *testing.T) {
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Fatal("dpkg-deb is missing (scripts/deps.sh installs it)")
	}
	paths := build(t, t.TempDir(), "deb", "rpm")
	client := find(t, paths, "hora-client_", ".deb")
	server := find(t, paths, "hora-server_", ".deb")
	node := find(t, paths, "hora-node_", ".deb")

	listing := run(t, "dpkg-deb", "-c", client)
	cmds, err := Commands("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, bin := range []string{" ./usr/bin/hora\n", " ./usr/libexec/hora/hora-sim\n"} {
		i := strings.Index(listing, bin)
		if i < 0 || !strings.Contains(listing[strings.LastIndex(listing[:i], "\n")+1:i], "-rwxr-xr-x root/root") {
			t.Errorf("hora-client lacks an executable %s:\n%s", strings.TrimSpace(bin), listing)
		}
	}
	for _, c := range cmds {
		if !strings.Contains(listing, "./usr/bin/"+c+" -> hora\n") {
			t.Errorf("hora-client lacks /usr/bin/%s -> hora", c)
		}
	}
	for _, want := range []string{"sbatch", "squeue", "qsub", "pbsnodes"} {
		if !slices.Contains(cmds, want) {
			t.Errorf("packaging/commands lacks %s", want)
		}
	}
	// Every man page in man/ is shipped, gzipped, by the package its section belongs to.
	mans, _ := filepath.Glob("../man/*.[1-8]")
	serverListing := run(t, "dpkg-deb", "-c", server)
	for _, m := range mans {
		name := filepath.Base(m)
		in := listing
		if !strings.HasSuffix(name, ".1") {
			in = serverListing
		}
		if !strings.Contains(in, "/usr/share/man/man"+name[len(name)-1:]+"/"+name+".gz\n") {
			t.Errorf("%s is not packaged", name)
		}
	}
	if f := run(t, "dpkg-deb", "-f", client, "Conflicts"); !strings.Contains(f, "slurm-client") ||
		!strings.Contains(f, "openpbs-client") || !strings.Contains(f, "torque-client") {
		t.Errorf("hora-client Conflicts = %q", f)
	}
	for _, want := range []string{"./usr/sbin/horad\n", "./usr/lib/systemd/system/horad.service\n",
		"./usr/lib/systemd/system/horad.socket\n", "./etc/hora/hora.toml\n"} {
		if !strings.Contains(serverListing, want) {
			t.Errorf("hora-server lacks %s", want)
		}
	}
	ctl := t.TempDir()
	run(t, "dpkg-deb", "-e", server, ctl)
	if b, _ := os.ReadFile(filepath.Join(ctl, "conffiles")); string(b) != "/etc/hora/hora.toml\n" {
		t.Errorf("conffiles = %q", b)
	}
	for _, s := range []string{"postinst", "prerm", "postrm"} {
		if fi, err := os.Stat(filepath.Join(ctl, s)); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("hora-server %s missing or not executable: %v", s, err)
		}
	}
	if f := run(t, "dpkg-deb", "-f", node, "Depends"); !strings.Contains(f, "openssh-server") {
		t.Errorf("hora-node Depends = %q", f)
	}
	// The shipped conffile must be a valid configuration.
	if out, err := exec.Command(filepath.Join(filepath.Dir(server), "horad"), "--check-config", "--config", "etc/hora.toml").CombinedOutput(); err != nil {
		t.Errorf("horad --check-config packaging/etc/hora.toml: %v\n%s", err, out)
	}

	if _, err := exec.LookPath("lintian"); err != nil {
		t.Fatal("lintian is missing (scripts/deps.sh installs it)")
	}
	out, _ := exec.Command("lintian", client, server, node).CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "E: ") {
			t.Errorf("lintian: %s", l)
		}
	}
}

// TestRPMContents checks the .rpms with rpm itself.
func TestRPMContents(t *testing.T) {
	if _, err := exec.LookPath("rpm"); err != nil {
		t.Fatal("rpm is missing (scripts/deps.sh installs it)")
	}
	paths := build(t, t.TempDir(), "rpm")
	client := find(t, paths, "hora-client-", ".rpm")
	server := find(t, paths, "hora-server-", ".rpm")
	l := run(t, "rpm", "-qpl", client)
	for _, want := range []string{"/usr/bin/hora\n", "/usr/bin/sbatch\n", "/usr/bin/pbsnodes\n"} {
		if !strings.Contains(l, want) {
			t.Errorf("hora-client.rpm lacks %s", want)
		}
	}
	if c := run(t, "rpm", "-qpc", server); c != "/etc/hora/hora.toml\n" {
		t.Errorf("hora-server.rpm config files = %q", c)
	}
	if s := run(t, "rpm", "-qp", "--scripts", server); !strings.Contains(s, "systemctl preset horad.socket") ||
		strings.Contains(s, "deb-systemd-helper") {
		t.Errorf("hora-server.rpm scripts are not the RPM ones:\n%s", s)
	}
	if c := run(t, "rpm", "-qp", "--conflicts", client); !strings.Contains(c, "slurm") {
		t.Errorf("hora-client.rpm conflicts = %q", c)
	}
}

// TestCompletionsLayout: completion files land where each shell loads them,
// and a bash completion written for hora is linked under every command
// name that has none of its own.
func TestCompletionsLayout(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"bash/hora", "bash/squeue", "zsh/_hora", "fish/hora.fish", "README"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := completions(dir, []string{"sbatch", "squeue", "qsub"})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range got {
		src := c.link
		if src == "" {
			src, _ = filepath.Rel(dir, c.src)
		} else {
			src = "-> " + src
		}
		lines = append(lines, c.dst+" "+src)
	}
	want := []string{
		"/usr/share/bash-completion/completions/hora bash/hora",
		"/usr/share/bash-completion/completions/qsub -> hora",
		"/usr/share/bash-completion/completions/sbatch -> hora",
		"/usr/share/bash-completion/completions/squeue bash/squeue",
		"/usr/share/fish/vendor_completions.d/hora.fish fish/hora.fish",
		"/usr/share/fish/vendor_completions.d/qsub.fish -> hora.fish",
		"/usr/share/fish/vendor_completions.d/sbatch.fish -> hora.fish",
		"/usr/share/fish/vendor_completions.d/squeue.fish -> hora.fish",
		"/usr/share/zsh/vendor-completions/_hora zsh/_hora",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("completions:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if got, err := completions(filepath.Join(dir, "none"), nil); err != nil || len(got) != 0 {
		t.Errorf("no completions directory: %v %v", got, err)
	}
}

package ec2_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"dispatch-tui/cloud/ec2"
)

// The user-data of a type with scratch finds the scratch volume, formats
// and mounts it at ec2.ScratchDir before it authorizes the dispatcher's
// key; without scratch it has no scratch part.
func TestUserDataScratch(t *testing.T) {
	s := newSigner(t)
	none := string(ec2.UserData("crunch", s.PublicKey(), "abc", ec2.Scratch{}))
	if strings.Contains(none, "SCRATCH") || strings.Contains(none, "mkfs") {
		t.Errorf("user-data without scratch mentions it:\n%s", none)
	}
	ud := string(ec2.UserData("crunch", s.PublicKey(), "abc", ec2.Scratch{Device: "/dev/xvdb", Bytes: 20 << 30}))
	for _, want := range []string{
		ec2.UserDataVarScratchDevice + "='/dev/xvdb'\n",
		ec2.UserDataVarScratchBytes + "='21474836480'\n",
		ec2.UserDataVarScratchDir + "='" + ec2.ScratchDir + "'\n",
	} {
		if !strings.Contains(ud, want) {
			t.Errorf("user-data lacks %q:\n%s", want, ud)
		}
	}
	mkfs, key := strings.Index(ud, "mkfs.ext4"), strings.Index(ud, "authorized_keys")
	if mkfs < 0 || key < 0 || mkfs > key {
		t.Errorf("the scratch volume is not set up before the key is authorized:\n%s", ud)
	}
	if out, err := exec.Command("sh", "-n", "-c", ud).CombinedOutput(); err != nil {
		t.Errorf("sh -n: %v\n%s", err, out)
	}
}

// scratchTree is a fake instance for the user-data script: /sys with the
// given NVMe disks, /proc/mounts, /etc, and stub commands that record
// their arguments (blkid finds a filesystem on the disks named in
// formatted).
type scratchTree struct {
	root, bin, log, home string
}

type fakeDisk struct {
	name, model string
	sectors     string
	partitions  []string
}

func newScratchTree(t *testing.T, disks []fakeDisk, formatted ...string) *scratchTree {
	t.Helper()
	st := &scratchTree{root: t.TempDir(), bin: t.TempDir()}
	st.log = filepath.Join(st.bin, "calls")
	st.home = filepath.Join(st.root, "home", "crunch")
	var fs []string
	for _, name := range formatted {
		fs = append(fs, filepath.Join(st.root, "dev", name))
	}
	write := func(path, content string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range disks {
		dir := filepath.Join(st.root, "sys", "block", d.name)
		write(filepath.Join(dir, "size"), d.sectors+"\n", 0o644)
		// sysfs pads the model with spaces.
		write(filepath.Join(dir, "device", "model"), d.model+"                 \n", 0o644)
		for _, p := range d.partitions {
			write(filepath.Join(dir, p, "size"), "2048\n", 0o644)
		}
		write(filepath.Join(st.root, "dev", d.name), "", 0o644)
	}
	write(filepath.Join(st.root, "proc", "mounts"), "/dev/nvme0n1p1 / ext4 rw 0 0\n", 0o644)
	write(filepath.Join(st.root, "etc", "fstab"), "LABEL=root / ext4 defaults 0 1\n", 0o644)
	if err := os.MkdirAll(st.home, 0o755); err != nil {
		t.Fatal(err)
	}
	record := "echo \"$(basename \"$0\") $*\" >>" + st.log + "\n"
	for name, body := range map[string]string{
		"mkfs.ext4": record,
		"mount":     record,
		"chown":     record,
		"sleep":     "",
		"id":        "[ \"$1\" = -gn ] && echo crunchers\nexit 0\n",
		"getent":    "echo \"crunch:x:1000:1000::" + st.home + ":/bin/sh\"\n",
		"blkid":     "case \" " + strings.Join(fs, " ") + " \" in *\" $1 \"*) echo \"$1: TYPE=ext4\"; exit 0 ;; esac\nexit 2\n",
	} {
		write(filepath.Join(st.bin, name), "#!/bin/sh\n"+body, 0o755)
	}
	return st
}

// run runs the user-data script in the tree, and returns its error and
// the stubs' calls.
func (st *scratchTree) run(t *testing.T, script []byte, wait string) ([]string, error) {
	t.Helper()
	cmd := exec.Command("sh", "-c", string(script))
	cmd.Env = append(os.Environ(), "PATH="+st.bin+":"+os.Getenv("PATH"), "DISPATCH_TUI_ROOT="+st.root, "DISPATCH_TUI_SCRATCH_WAIT="+wait)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("user-data output:\n%s", out)
	}
	b, _ := os.ReadFile(st.log)
	calls := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := range calls {
		calls[i] = strings.ReplaceAll(calls[i], st.root, "$ROOT")
	}
	return calls, err
}

// On a Nitro instance the scratch volume is the NVMe disk with EBS's model
// and exactly the requested size that has no partitions and no
// filesystem: not the root disk, not an instance-store disk, not another
// EBS volume someone formatted.
func TestUserDataScratchFindsTheVolume(t *testing.T) {
	const want = "41943040" // 20 GiB in 512-byte sectors
	const ebs = "Amazon Elastic Block Store"
	st := newScratchTree(t, []fakeDisk{
		{name: "nvme0n1", model: ebs, sectors: want, partitions: []string{"nvme0n1p1", "nvme0n1p128"}},
		{name: "nvme1n1", model: ebs, sectors: want},
		{name: "nvme2n1", model: "Amazon EC2 NVMe Instance Storage", sectors: want},
		{name: "nvme3n1", model: ebs, sectors: "83886080"},
		{name: "nvme4n1", model: ebs, sectors: want},
	}, "nvme1n1")
	ud := ec2.UserData("crunch", newSigner(t).PublicKey(), "abc", ec2.Scratch{Device: filepath.Join(st.root, "dev", "xvdb"), Bytes: 20 << 30})
	calls, err := st.run(t, ud, "60")
	if err != nil {
		t.Fatalf("user-data failed: %v", err)
	}
	wantCalls := []string{
		"mkfs.ext4 -q -E nodiscard -L " + ec2.ScratchLabel + " $ROOT/dev/nvme4n1",
		"mount $ROOT/dev/nvme4n1 $ROOT" + ec2.ScratchDir,
		"chown crunch:crunchers $ROOT" + ec2.ScratchDir,
	}
	if strings.Join(calls[:min(3, len(calls))], "\n") != strings.Join(wantCalls, "\n") {
		t.Errorf("calls:\n%s\nwant first:\n%s", strings.Join(calls, "\n"), strings.Join(wantCalls, "\n"))
	}
	fstab, _ := os.ReadFile(filepath.Join(st.root, "etc", "fstab"))
	if !strings.Contains(string(fstab), "LABEL="+ec2.ScratchLabel+" "+ec2.ScratchDir+" ext4 defaults,nofail 0 2\n") {
		t.Errorf("fstab:\n%s", fstab)
	}
	if _, err := os.Stat(filepath.Join(st.home, ".ssh", "authorized_keys")); err != nil {
		t.Errorf("key not authorized after the scratch volume was set up: %v", err)
	}
}

// Without its scratch volume the script stops before it authorizes the
// key: the instance never becomes ready, rather than run containers
// without the scratch space they asked for.
func TestUserDataScratchMissingStopsBoot(t *testing.T) {
	st := newScratchTree(t, []fakeDisk{
		{name: "nvme0n1", model: "Amazon Elastic Block Store", sectors: "41943040", partitions: []string{"nvme0n1p1"}},
	})
	ud := ec2.UserData("crunch", newSigner(t).PublicKey(), "abc", ec2.Scratch{Device: filepath.Join(st.root, "dev", "xvdb"), Bytes: 20 << 30})
	calls, err := st.run(t, ud, "2")
	if err == nil {
		t.Fatalf("user-data succeeded without a scratch volume; calls %q", calls)
	}
	if _, err := os.Stat(filepath.Join(st.home, ".ssh", "authorized_keys")); err == nil {
		t.Error("the key was authorized although the scratch volume is missing")
	}
}

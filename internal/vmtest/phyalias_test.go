package vmtest

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPHYModule matches PHY IDs against modules.alias lines as depmod writes
// them for marvell.ko and realtek.ko (Debian 6.1).
func TestPHYModule(t *testing.T) {
	dir := t.TempDir()
	alias := "alias mdio:0000000000101011000010011011???? marvell10g\n" +
		"alias mdio:0000000101000001000011011101???? marvell\n" +
		"alias mdio:0000000000011100110010?????????? realtek\n" +
		"alias pci:v00008086d00007AACsv*sd*bc*sc*i* dwmac_intel\n"
	if err := os.WriteFile(filepath.Join(dir, "modules.alias"), []byte(alias), 0o644); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[uint32]string{0x01410DD0: "marvell", 0x01410DD1: "marvell", 0x001CC916: "realtek",
		0x002B09B0: "marvell10g", 0x02A80390: "", 0x01410C00: ""} {
		got, err := PHYModule(dir, id)
		if err != nil || got != want {
			t.Errorf("PHY 0x%08x: %q, %v; want %q", id, got, err, want)
		}
	}
	if _, err := PHYModule(t.TempDir(), 1); err == nil {
		t.Error("no modules.alias: no error")
	}
}

// TestGuestEthtool finds the binary, its interpreter and its libraries in the
// root setup-vfiouser.sh unpacks, following the root's own links.
func TestGuestEthtool(t *testing.T) {
	a, err := LocateVFIOUser()
	if err != nil || a.Ethtool == "" {
		t.Skip("no guest ethtool root (internal/vmtest/setup-vfiouser.sh)")
	}
	files, bin, err := GuestEthtool(a.Ethtool)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range files {
		names[f.Name] = true
		if st, err := os.Stat(f.Src); err != nil || !st.Mode().IsRegular() {
			t.Errorf("%s from %s: %v", f.Name, f.Src, err)
		}
	}
	for _, want := range []string{"sbin/ethtool", "lib64/ld-linux-x86-64.so.2", "lib/x86_64-linux-gnu/libc.so.6", "usr/lib/x86_64-linux-gnu/libmnl.so.0"} {
		if !names[want] {
			t.Errorf("no %s in %v", want, names)
		}
	}
	if bin != "/sbin/ethtool" {
		t.Errorf("binary at %s", bin)
	}
}

package vmtest

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// GuestEthtool lists the initramfs files that run ethtool in the guest, from
// root (Assets.Ethtool: Debian's ethtool, libmnl0 and libc6 unpacked by
// setup-vfiouser.sh): the binary at sbin/ethtool, its ELF interpreter and the
// libraries it names (DT_NEEDED), each at the path the interpreter looks in
// (/lib/x86_64-linux-gnu, /usr/lib/x86_64-linux-gnu), with the root's
// symbolic links followed inside the root. It returns the guest path of the
// binary.
func GuestEthtool(root string) ([]InitramfsFile, string, error) {
	const bin = "sbin/ethtool"
	src := filepath.Join(root, bin)
	f, err := elf.Open(src)
	if err != nil {
		return nil, "", fmt.Errorf("guest ethtool: %w (run internal/vmtest/setup-vfiouser.sh)", err)
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		return nil, "", fmt.Errorf("guest ethtool: %w", err)
	}
	files := []InitramfsFile{{Name: bin, Src: src, Mode: 0o755}}
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return nil, "", fmt.Errorf("guest ethtool: interpreter: %w", err)
		}
		interp := strings.TrimRight(string(b), "\x00")
		host, err := inRoot(root, interp)
		if err != nil {
			return nil, "", err
		}
		files = append(files, InitramfsFile{Name: strings.TrimPrefix(interp, "/"), Src: host, Mode: 0o755})
	}
	for _, lib := range libs {
		found := false
		for _, dir := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"} {
			host, err := inRoot(root, dir+"/"+lib)
			if err != nil {
				continue
			}
			files = append(files, InitramfsFile{Name: strings.TrimPrefix(dir, "/") + "/" + lib, Src: host, Mode: 0o755})
			found = true
			break
		}
		if !found {
			return nil, "", fmt.Errorf("guest ethtool: %s needs %s, not in %s", src, lib, root)
		}
	}
	return files, "/" + bin, nil
}

// inRoot resolves path inside root, following symbolic links (absolute ones
// relative to root), to a host file.
func inRoot(root, path string) (string, error) {
	p := path
	for i := 0; i < 16; i++ {
		host := filepath.Join(root, p)
		st, err := os.Lstat(host)
		if err != nil {
			return "", err
		}
		if st.Mode()&os.ModeSymlink == 0 {
			return host, nil
		}
		t, err := os.Readlink(host)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = t
	}
	return "", fmt.Errorf("%s: too many links in %s", path, root)
}

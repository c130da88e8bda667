package vmtest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// VFIOModules are the modules the guest needs for vfio-pci with the type1
// IOMMU backend; ModuleOrder adds their dependencies (vfio, irqbypass,
// vfio_virqfd, vfio-pci-core on Debian's 6.1 kernels).
var VFIOModules = []string{"vfio_iommu_type1", "vfio-pci"}

// modName normalises a module name: no directory, no .ko[.xz|.zst|.gz], and
// '-' and '_' are the same (as modprobe treats them).
func modName(p string) string {
	b := filepath.Base(p)
	if i := strings.Index(b, ".ko"); i >= 0 {
		b = b[:i]
	}
	return strings.ReplaceAll(b, "-", "_")
}

// ModuleOrder reads modDir/modules.dep and returns the paths (relative to
// modDir) of the wanted modules and everything they depend on, each after its
// dependencies, each once.
func ModuleOrder(modDir string, wanted []string) ([]string, error) {
	f, err := os.Open(filepath.Join(modDir, "modules.dep"))
	if err != nil {
		return nil, fmt.Errorf("read modules.dep (run depmod -b, as setup.sh does): %w", err)
	}
	defer f.Close()
	deps := map[string][]string{} // module path -> dependency paths, as listed
	byName := map[string]string{} // normalised name -> module path
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		mod, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		deps[mod] = strings.Fields(rest)
		byName[modName(mod)] = mod
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read modules.dep: %w", err)
	}
	var order []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(mod string, chain []string) error
	visit = func(mod string, chain []string) error {
		switch state[mod] {
		case 2:
			return nil
		case 1:
			return fmt.Errorf("modules.dep has a dependency cycle: %s -> %s", strings.Join(chain, " -> "), mod)
		}
		if _, ok := deps[mod]; !ok {
			return fmt.Errorf("modules.dep lists %s as a dependency but not as a module", mod)
		}
		state[mod] = 1
		ds := deps[mod]
		// modprobe loads a module's list from the end; do the same.
		for i := len(ds) - 1; i >= 0; i-- {
			if err := visit(ds[i], append(chain, mod)); err != nil {
				return err
			}
		}
		state[mod] = 2
		order = append(order, mod)
		return nil
	}
	for _, w := range wanted {
		mod, ok := byName[modName(w)]
		if !ok {
			return nil, fmt.Errorf("module %s not in %s/modules.dep (is it built in, or is this kernel missing it?)", w, modDir)
		}
		if err := visit(mod, nil); err != nil {
			return nil, err
		}
	}
	for _, m := range order {
		if !strings.HasSuffix(m, ".ko") {
			return nil, fmt.Errorf("module %s is compressed; the guest's finit_module loader needs plain .ko files", m)
		}
	}
	return order, nil
}

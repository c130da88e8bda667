package vmtest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// PHYModule is the module udev would load for a PHY with identifier id
// (PHYID1<<16 | PHYID2): the kernel's MDIO bus announces a PHY device with
// the modalias "mdio:" followed by the 32 bits of the ID, most significant
// first (drivers/net/phy/mdio_bus.c mdio_uevent, MDIO_MODULE_PREFIX), and a
// PHY driver's MODULE_DEVICE_TABLE(mdio, ...) becomes modules.alias lines of
// 32 '0', '1' or '?' (a bit its mask ignores). The first matching alias
// wins, as modprobe loads the first; "" if none matches (phylib then binds
// its generic driver).
func PHYModule(modDir string, id uint32) (string, error) {
	f, err := os.Open(filepath.Join(modDir, "modules.alias"))
	if err != nil {
		return "", fmt.Errorf("read modules.alias (run depmod -b, as the setup scripts do): %w", err)
	}
	defer f.Close()
	want := fmt.Sprintf("%032b", id)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 || fs[0] != "alias" || !strings.HasPrefix(fs[1], "mdio:") {
			continue
		}
		if pat := fs[1][len("mdio:"):]; len(pat) == 32 && bitsMatch(pat, want) {
			return fs[2], nil
		}
	}
	return "", sc.Err()
}

func bitsMatch(pat, bits string) bool {
	for i := 0; i < 32; i++ {
		if pat[i] != '?' && pat[i] != bits[i] {
			return false
		}
	}
	return true
}

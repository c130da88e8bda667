package main

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// A counter book keeps an interface's statistics across the driver zeroing
// them: some drivers start their counters over when the interface is
// reopened (seen with stmmac on Debian's 6.1 after ethtool -G and -s), while
// the device model and the peer count the whole session. netinit reads the
// counters before and after every step that may reopen the interface
// (checkpoint: setUp, ethtool); a counter lower than at the last reading was
// zeroed, and its last reading is carried over. Frames between the last
// reading and the zeroing would be lost, but no step sends any there.
type book struct {
	last, base map[string]uint64
	zeroed     []string // where a reset was seen, for the log
}

var books = map[string]*book{}

// checkpoint reads ifname's counters into its book.
func checkpoint(ifname, where string) {
	b := books[ifname]
	if b == nil {
		b = &book{last: map[string]uint64{}, base: map[string]uint64{}}
		books[ifname] = b
	}
	var zeroed bool
	for _, n := range statNames {
		v, err := strconv.ParseUint(readSys(filepath.Join("/sys/class/net", ifname, "statistics", n)), 10, 64)
		if err != nil {
			continue // the interface is gone, or the file unreadable: stats() reports it
		}
		if v < b.last[n] {
			b.base[n] += b.last[n]
			zeroed = true
		}
		b.last[n] = v
	}
	if zeroed {
		b.zeroed = append(b.zeroed, where)
	}
}

// totals are ifname's counters since its book began, and where the driver
// zeroed them.
func totals(ifname string) (map[string]uint64, []string) {
	checkpoint(ifname, "statistics")
	b := books[ifname]
	t := map[string]uint64{}
	for _, n := range statNames {
		t[n] = b.base[n] + b.last[n]
	}
	return t, b.zeroed
}

// forget ends ifname's book (its driver is unloaded: a new interface counts
// on a new line).
func forget(ifname string) { delete(books, ifname) }

func (b *book) String() string { return fmt.Sprintf("%v+%v", b.base, b.last) }

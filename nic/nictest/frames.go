package nictest

import (
	"math/rand/v2"
	"net"
)

// RandFrame is a unicast frame to dst of n bytes (at least 7) with a random
// payload and a locally administered source address.
func RandFrame(rng *rand.Rand, dst net.HardwareAddr, n int) []byte {
	f := make([]byte, n)
	for i := range f {
		f[i] = byte(rng.Uint32())
	}
	copy(f, dst)
	f[6] = 0x02 // locally administered unicast source
	return f
}

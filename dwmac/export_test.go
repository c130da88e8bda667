package dwmac

// AllowCachedRings makes Open keep descriptor rings in cached memory on a
// non-coherent allocator that has no uncached memory: the layout ringmem.go
// explains is broken, for the test that shows the cache model catches it.
func AllowCachedRings(c *Config) { c.cachedRings = true }

// UncheckedTxMeta makes CheckTxMeta accept checksum requests the engine
// cannot carry out: a wrong driver, for the tests that show the model's
// faults catch it.
func UncheckedTxMeta(c *Config) { c.uncheckedTxMeta = true }

// NoEDSE makes launch-time queues write enhanced descriptors on channels
// left without EDSE: a wrong driver, for the model's test.
func NoEDSE(c *Config) { c.noEDSE = true }

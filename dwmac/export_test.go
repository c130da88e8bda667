package dwmac

// AllowCachedRings makes Open keep descriptor rings in cached memory on a
// non-coherent allocator that has no uncached memory: the layout ringmem.go
// explains is broken, for the test that shows the cache model catches it.
func AllowCachedRings(c *Config) { c.cachedRings = true }

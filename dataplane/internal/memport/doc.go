// Package memport is an in-memory nic.Port for the dataplane's tests: frames are
// injected on its RX queues by the test (playing the wire and the device) and what
// the dataplane sends is recorded byte for byte. It checks the contract as a
// device would: a buffer handed to Send must be owned by the caller, Send takes no
// more than the ring has room for, and one Send is one tail write.
//
// For benchmarks, InjectBurst puts a burst on a ring under one lock with the
// buffers taken at once, and ports given the same Config.Alloc share one memory
// (as the devices of one host do), so that the dataplane redirects between them
// without copying; completed TX buffers go back to their pools a run at a time.
// Recv moves a run of ring slots with one copy, and Send adds to the queue's
// atomic counters once per call: what is left per frame is what a device's
// descriptors would cost, so the port charges the dataplane little of its own.
package memport

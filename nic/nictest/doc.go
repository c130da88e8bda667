// Package nictest holds test helpers that work on any driver through the nic
// contract: an allocator whose memory no device may reach, counter lookup that
// fails the test when the counter is missing, and waits with deadlines for
// received frames and for TX rings to drain. Drivers' tests use it against their
// models and fakes; it knows nothing of any device.
package nictest

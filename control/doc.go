// Package control is the control channel of a running `xnic run`: one Unix
// socket per port, owner only (0600, in a 0700 directory), at
// $XDG_RUNTIME_DIR/xnic/PORT.sock, or /run/xnic/PORT.sock without
// XDG_RUNTIME_DIR. Commands that read or change a port a run holds (stats,
// regs, reg, phy, info, link, ptp, prog map, prog show, prog load, dump,
// prog events) ask the run through it instead of opening the port, which
// would reset the device under the run or fail (VFIO hands a device to one
// process). A Go program that embeds xnic's dataplane can serve the same
// protocol (Server) and talk to a run (Call, Follow).
//
// # Protocol
//
// A client connects, sends one Request as a JSON line and reads one Response
// as a JSON line; then the connection ends. A streaming request (Stream
// reports which: trace, capture, events) is answered with a Response line
// first (its Error set: refused) and then one JSON value per line until
// either side hangs up.
//
// The server answers each connection in its own goroutine; what it calls must
// be safe alongside the poll goroutines (the Handler's business).
package control

// Command xnic drives Ethernet controllers from user space: it lists and binds
// devices, shows their registers, link and counters, runs XDP programs offline and
// on ports (real or simulated), and generates traffic. Run `xnic help` for the list
// of commands; each file of this package registers one group of commands.
//
// The package is the command line only: what it shows and parses lives in
// importable packages (control: the control socket of a running port;
// dataplane/mapio, btfvalue, fibfile, events: bpftool's map formats, BTF
// values, FIB files, ring buffer and perf records), and what it knows of a
// driver family is in one file per family (igb.go, dwmac.go, fec.go)
// registering a familyDriver (drivers.go), whose register facts are the
// driver's own (nic.RegFacts). No other file names a family
// (TestNoFamilyOutsideItsFile). A run (run.go, runprog.go) serves a control
// socket per port (control.go), through which the port commands, dump,
// prog show/load/events/trace and stats --watch reach it.
package main

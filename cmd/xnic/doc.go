// Command xnic drives Ethernet controllers from user space: it lists and binds
// devices, shows their registers, link and counters, runs XDP programs offline and
// on ports (real or simulated), and generates traffic. Run `xnic help` for the list
// of commands; each file of this package registers one group of commands.
package main

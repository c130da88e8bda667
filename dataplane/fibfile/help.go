package fibfile

// Help describes the FIB file format for a command's help.
const Help = `A FIB file gives bpf_fib_lookup and bpf_check_mtu their table (xnic run
--fib, xnic prog run --fib): xnic's ports, routes and neighbours, in JSON:

  {"interfaces": [{"ifindex": 1, "mac": "02:00:00:00:00:01", "mtu": 1500,
                   "forwarding": true, "addrs": ["10.1.0.1/24"]}],
   "routes": [{"dst": "198.18.0.0/15", "gateway": "10.2.0.2", "ifindex": 2},
              {"dst": "203.0.113.0/24", "type": "blackhole"}],
   "neighbours": [{"ifindex": 2, "ip": "10.2.0.2", "mac": "02:47:57:00:00:02"}]}

Route types: unicast (default), blackhole, unreachable, prohibit, local;
"table", "metric", "mtu" (a locked route MTU) and "src" are optional, as are an
interface's "mtu" (1500), "forwarding6" and, with xnic run, its "mac" (the
port's; port N of the run has ifindex N+1). Unknown members are refused. The
host's own tables are not used: xnic's ports are not the host's interfaces.
`

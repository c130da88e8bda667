package mapio

// FileHelp describes the map file format for a command's help.
const FileHelp = `Map files fill a program's maps before it runs (xnic run --maps, xnic prog
run --maps). Two forms, told apart by the first character.

JSON, as bpftool map dump -j prints each map, under the map's name:

  {"acl_v4": [{"key": ["0x08","0x00","0x00","0x00","0x0a","0x00","0x00","0x00"],
               "value": ["0x00","0x00","0x00","0x00","0x00","0x00","0x00","0x00"]}],
   "rxcnt":  [{"key": "11000000", "values": [{"cpu": 0, "value": "0100000000000000"}]}]}

or a list of entries, each naming its map ("map": "acl_v4"). Keys and values are
bpftool's arrays of "0xNN" strings (numbers 0-255 also do) or one hex string;
bpftool's "formatted" member is ignored. Per-CPU maps take "values" (one per
CPU; CPUs the run does not have are skipped) or one "value" for every CPU.

Hex lines, one entry each, '#' starting a comment:

  acl_v4  08000000 0a000000  0000000000000000

the map name, then the key's bytes, then the value's, in hex; spaces may split
the bytes anywhere as long as the key's bytes add up to the map's key size.

--map NAME:KEY=VALUE sets one entry: KEY and VALUE are integers of the map's
key and value size (VALUE may be a comma list of 32-bit fields, or program
names standing for their ids), or bpftool byte lists: "10 0 0 1" (C notation)
or "hex 0a000001".
`

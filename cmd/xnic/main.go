package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// command is one subcommand of xnic. Files of this package register theirs in
// init with register.
type command struct {
	name    string // e.g. "list" or "prog run"
	usage   string // arguments, after the name
	summary string // one line
	// run gets the arguments after the command's name, and where to write.
	run func(args []string, stdout, stderr io.Writer) error
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// errUsage marks an error in the command line: xnic prints the usage and exits 2.
var errUsage = errors.New("usage")

// usageErrorf returns an error wrapping errUsage.
func usageErrorf(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

// newFlags makes a FlagSet that reports errors instead of exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		if c, ok := commands[name]; ok {
			fmt.Fprintf(stderr, "usage: %s\n  %s\n", strings.TrimSpace("xnic "+c.name+" "+c.usage), c.summary)
		}
		fmt.Fprintln(stderr, "flags:")
		fs.PrintDefaults()
	}
	return fs
}

// parseInterspersed parses flags that may come before or after positional
// arguments ("xnic info 0000:03:00.0 --json") and returns the positionals.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err // the FlagSet printed the usage: exit 0
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, checkFlagValues(fs)
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), checkFlagValues(fs)
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run finds the longest registered command name that prefixes args and runs it.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || isHelp(args[0]) {
		if len(args) > 1 && args[0] == "help" {
			return run(append(args[1:], "-h"), stdout, stderr)
		}
		printHelp(stdout)
		return 0
	}
	var c *command
	n := 0
	for i := min(len(args), 3); i >= 1; i-- {
		if cc, ok := commands[strings.Join(args[:i], " ")]; ok {
			c, n = cc, i
			break
		}
	}
	if c == nil {
		if group := groupOf(args); group != "" {
			// "xnic prog", "xnic prog -h": the group's subcommands.
			w, code := stdout, 0
			if len(args) > 1 && !isHelp(args[1]) {
				fmt.Fprintf(stderr, "xnic: unknown command %q\n", strings.Join(args, " "))
				w, code = stderr, 2
			}
			printCommands(w, group+" ")
			return code
		}
		fmt.Fprintf(stderr, "xnic: unknown command %q; run 'xnic help'\n", strings.Join(args, " "))
		return 2
	}
	if err := c.run(args[n:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "xnic %s: %v\n", c.name, err)
		if errors.Is(err, errUsage) {
			fmt.Fprintf(stderr, "usage: xnic %s %s\n", c.name, c.usage)
			return 2
		}
		return 1
	}
	return 0
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "xnic: userspace NIC drivers with XDP programs")
	fmt.Fprintln(w, "\ncommands (xnic help COMMAND or xnic COMMAND -h for its flags):")
	printCommands(w, "")
	fmt.Fprintln(w, "\nports:")
	fmt.Fprintln(w, "  BDF                        a PCI device bound to vfio-pci (driver by PCI ID: igb, or dwmac for Intel mGbE)")
	fmt.Fprintln(w, "  --sim KIND[:VARIANT][:N]   a device model, N ports (run, pktgen); KIND (VARIANTs, first the default):")
	fmt.Fprintln(w, "                             "+simChoices()+"; e.g. igb:2, dwmac:imx8mp, fec:imx6")
	fmt.Fprintln(w, "  --platform NAME@ADDR[,uncached=PHYS+SIZE]")
	fmt.Fprintln(w, "                             an i.MX8 MAC through /dev/mem and huge pages (root): fec@0x30be0000,")
	fmt.Fprintln(w, "                             eqos@0x30bf0000, or COMPATIBLE@ADDR (fsl,imx8mm-fec@0x30be0000);")
	fmt.Fprintln(w, "                             uncached= names reserved RAM for the descriptor rings (needed by the EQOS)")
	faultKindsHelp(w) // simfault.go
}

func isHelp(a string) bool { return a == "help" || a == "-h" || a == "--help" || a == "-help" }

// groupOf is "prog" when args start with a word that only prefixes commands
// ("prog run", "prog bench", ...), else "".
func groupOf(args []string) string {
	for n := range commands {
		if g, _, ok := strings.Cut(n, " "); ok && g == args[0] {
			return g
		}
	}
	return ""
}

// printCommands lists the commands whose names start with prefix: the name and
// summary on one line, the arguments indented below, so columns stay aligned
// however long a usage is.
func printCommands(w io.Writer, prefix string) {
	names := make([]string, 0, len(commands))
	for n := range commands {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		c := commands[n]
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
		if c.usage != "" {
			fmt.Fprintf(w, "  %-*s    %s %s\n", width, "", c.name, c.usage)
		}
	}
}

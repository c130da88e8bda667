package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/xnic-dev/xnic/dataplane/fibfile"
	"github.com/xnic-dev/xnic/dataplane/mapio"
	"github.com/xnic-dev/xnic/nic"
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
//
// A bad flag is the error (printed once, by run, with the usage line); -h
// prints the command's usage and flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	defer func() { fs.Usage = usage; fs.SetOutput(out) }()
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(out)
				usage()
				return nil, err // exit 0
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
			if t, ok := helpTopics[args[1]]; ok && len(args) == 2 {
				fmt.Fprint(stdout, t)
				return 0
			}
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
			// "xnic prog -h": the group's subcommands; "xnic prog" alone
			// or with an unknown subcommand: a usage error.
			if len(args) > 1 && isHelp(args[1]) {
				printCommands(stdout, group+" ")
				return 0
			}
			if len(args) > 1 {
				fmt.Fprintf(stderr, "xnic: unknown command %q; the %s commands are:\n", strings.Join(args, " "), group)
			} else {
				fmt.Fprintf(stderr, "xnic %s: name one of its commands:\n", group)
			}
			printCommands(stderr, group+" ")
			return 2
		}
		fmt.Fprintf(stderr, "xnic: unknown command %q; run 'xnic help'\n", strings.Join(args, " "))
		return 2
	}
	if err := c.run(args[n:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "xnic %s: %v\n", c.name, err)
		if errors.Is(err, errUsage) || errors.Is(err, nic.ErrConfig) {
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
	fmt.Fprintf(w, "  BDF                        a PCI device bound to vfio-pci (the driver chosen by its PCI ID: %s)\n", pciFamilies())
	fmt.Fprintln(w, "  --sim KIND[:VARIANT][:N]   a device model, N ports (run, pktgen); KIND (VARIANTs, first the default):")
	fmt.Fprintln(w, "                             "+simChoices()+"; e.g. "+simExamples(2))
	fmt.Fprintln(w, "  --platform NAME@ADDR[,uncached=PHYS+SIZE]")
	fmt.Fprintln(w, "                             an SoC's MAC through /dev/mem and huge pages (root): "+platformExamples()+",")
	fmt.Fprintln(w, "                             or COMPATIBLE@ADDR; uncached= names reserved RAM for the descriptor rings")
	fmt.Fprintln(w, "                             (for a MAC whose rings cannot be kept coherent by cache maintenance)")
	faultKindsHelp(w) // simfault.go
	fmt.Fprintln(w, "\nmore: xnic help maps | fib (file formats), xnic help exit (exit status), xnic help json (JSON shapes)")
	fmt.Fprintln(w, "\nfamilies:")
	for _, f := range families {
		fmt.Fprintf(w, "  %-26s %s\n", f.name, f.about)
	}
}

// helpTopics are the file formats `xnic help TOPIC` describes.
var helpTopics = map[string]string{"maps": mapio.FileHelp, "fib": fibfile.Help, "exit": exitHelp, "json": jsonHelp}

// exitHelp is the exit status rule.
const exitHelp = `xnic exits 0 when the command did what it was asked, 1 when it failed (a
device, a run or a program refused or faulted; prog run: any frame that could
not be run; selftest: any test failed), and 2 for a usage error: an unknown
command or flag, a missing argument, or a value that makes no sense (a ring
size or queue count the driver refuses, a frequency offset of 1e9 ppb or more,
a duration under 10ms, a CPU named twice). Errors are printed once, on stderr.
`

// jsonHelp is the JSON rule.
const jsonHelp = `With --json, xnic prints one JSON document (streams: one per line). The same
kind of data has one shape everywhere: counters are one object {"name": value}
in the driver's order (stats, run, stats --watch); map dumps are bpftool's
(xnic prog map dump); PCI IDs are "0x" and four hex digits (list, info);
times are RFC 3339 or Unix nanoseconds named *_ns or "ts".
`

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

// interrupted returns a channel closed at the first SIGINT or SIGTERM, and
// the function that stops watching for them.
func interrupted() (<-chan struct{}, func()) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		select {
		case <-sig:
			close(stop)
		case <-done:
		}
	}()
	return stop, func() { signal.Stop(sig); close(done) }
}

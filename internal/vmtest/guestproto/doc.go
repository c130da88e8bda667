// Package guestproto is what the VM harness (package vmtest, on the host) and
// the guest's /init (command guestinit) agree on: the configuration file the
// host puts into the initramfs, and the lines /init prints on the console.
//
// Console lines from /init all start with Prefix:
//
//	@@xnic boot                         /init started
//	@@xnic step <name> ok|fail <detail> a set-up step (mount, module, bind)
//	@@xnic start <bin>                  a test binary starts
//	@@xnic out <bin>| <line>            one line of its output (go test -v)
//	@@xnic exit <bin> <code> <seconds>  it ended (code -1: killed or not run)
//	@@xnic dmesg| <line>                kernel log tail, printed at the end
//	@@xnic done <failures>              everything ran; power-off follows
//	@@xnic fatal <message>              /init gave up; power-off follows
//
// guestinit's own checks are reported as test binary SmokeBinary, in the same
// "go test -v" format as the real test binaries, so the host treats all
// alike.
package guestproto

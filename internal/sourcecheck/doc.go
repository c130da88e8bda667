// Package sourcecheck holds tests that keep the source tree to the rules the
// project sets itself (COMMON standards, issue 22): today, that no non-test
// function is longer than a reader can hold, outside a short allow-list
// where each entry says why.
//
// It has no non-test code: its tests parse the module's Go files with go/ast
// and import no package of the project.
package sourcecheck

// Package repocheck holds the repository's own checks, run by `make test`:
// the layering of the packages (which package may depend on which), that
// every relative link in the Markdown files resolves, and that the tracked
// files speak of the project alone. It has no code of its own; the checks
// are its tests.
package repocheck

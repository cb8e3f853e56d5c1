package storage

import (
	"errors"
	"fmt"
)

// Sentinel errors callers branch on (with errors.Is).
var (
	// ErrShortRead: the file ended before the requested range did.
	ErrShortRead = errors.New("short read")
	// ErrChanged: the file no longer matches what the caller expected (size, inode or mtime
	// captured when the manifest was written), or it shrank below a requested range after open.
	ErrChanged = errors.New("file changed since it was described")
	// ErrClosed: the reader was closed.
	ErrClosed = errors.New("engine/storage: reader closed")
	// ErrBadRange: a request with a negative offset or length, a missing file or a bad device.
	ErrBadRange = errors.New("bad range")
	// ErrNotRegular: Open on something that is not a regular file.
	ErrNotRegular = errors.New("not a regular file")
)

// ReadError names the file and byte range a failed read was for. Err wraps the cause: an errno
// from the kernel (e.g. syscall.EIO), ErrShortRead or ErrChanged.
type ReadError struct {
	Path   string
	Offset int64
	Length int64
	Err    error
}

func (e *ReadError) Error() string {
	return fmt.Sprintf("engine/storage: read %s offset %d length %d: %v", e.Path, e.Offset, e.Length, e.Err)
}

func (e *ReadError) Unwrap() error { return e.Err }

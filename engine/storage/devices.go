package storage

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// DeviceMap assigns dense device indices (0, 1, ...) to paths by the filesystem device (st_dev)
// they live on, so a dataset striped over several folders gets one reader queue per device.
// Folders on the same device share an index. Safe for concurrent use.
type DeviceMap struct {
	mu    sync.Mutex
	byDev map[uint64]int
}

// NewDeviceMap returns an empty map.
func NewDeviceMap() *DeviceMap { return &DeviceMap{byDev: make(map[uint64]int)} }

// Device returns the index of the device holding path (a file or folder), assigning the next
// free index to a device seen for the first time.
func (m *DeviceMap) Device(path string) (int, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, fmt.Errorf("engine/storage: stat %s: %w", path, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if i, ok := m.byDev[st.Dev]; ok {
		return i, nil
	}
	i := len(m.byDev)
	m.byDev[st.Dev] = i
	return i, nil
}

// Len is the number of distinct devices seen.
func (m *DeviceMap) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byDev)
}

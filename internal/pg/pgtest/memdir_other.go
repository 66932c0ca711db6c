//go:build !linux

package pgtest

// memoryDir is "": only Linux's /dev/shm is known to be a tmpfs.
func memoryDir() string { return "" }

package pgtest

import "syscall"

// tmpfsMagic is the file system type of a tmpfs (statfs(2)).
const tmpfsMagic = 0x01021994

// memoryDir is /dev/shm when it is a tmpfs with room for the test
// clusters, else "".
func memoryDir() string {
	const dir = "/dev/shm"
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Type != tmpfsMagic {
		return ""
	}
	if free := uint64(st.Bavail) * uint64(st.Bsize); free < minMemoryBytes {
		return ""
	}
	return dir
}

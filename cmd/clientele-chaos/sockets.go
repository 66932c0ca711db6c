package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// socketOwner names the process, among pids (pid to name), that holds
// the local end of the TCP connection from local to peer on this
// machine, or "" when none does (it ended, or the connection closed):
// the socket's inode is found in /proc/net/tcp (and tcp6) by its two
// ports, and then among the processes' open files (Linux only).
func socketOwner(local, peer string, pids map[int]string) string {
	lport, err1 := port(local)
	pport, err2 := port(peer)
	if err1 != nil || err2 != nil {
		return ""
	}
	inode := socketInode(lport, pport)
	if inode == "" {
		return ""
	}
	want := "socket:[" + inode + "]"
	for pid, name := range pids {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if link, err := os.Readlink(dir + "/" + fd.Name()); err == nil && link == want {
				return name
			}
		}
	}
	return ""
}

// port is the port of a host:port address.
func port(addr string) (int, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(p)
}

// socketInode is the inode of the TCP socket whose local port is lport
// and remote port pport, from /proc/net/tcp and /proc/net/tcp6 (lines
// "sl local_address rem_address st ... uid timeout inode ...", addresses
// as hex IP:PORT).
func socketInode(lport, pport int) string {
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 || hexPort(fs[1]) != lport || hexPort(fs[2]) != pport {
				continue
			}
			f.Close()
			return fs[9]
		}
		f.Close()
	}
	return ""
}

// hexPort is the port of an address of /proc/net/tcp (IP:PORT in hex), or -1.
func hexPort(addr string) int {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return -1
	}
	p, err := strconv.ParseInt(addr[i+1:], 16, 32)
	if err != nil {
		return -1
	}
	return int(p)
}

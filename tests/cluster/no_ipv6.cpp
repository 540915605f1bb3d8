// LD_PRELOAD stand-in for a kernel without IPv6 (booted with ipv6.disable=1): socket(AF_INET6)
// fails with EAFNOSUPPORT, every other socket is the real one. check.bats runs ddp-check under
// it on nodes whose interfaces have IPv6 turned off, so that the rendezvous and --pairs must
// listen and connect over IPv4 alone.
#include <dlfcn.h>
#include <sys/socket.h>

#include <cerrno>

extern "C" int socket(int domain, int type, int protocol) {
  if (domain == AF_INET6) {
    errno = EAFNOSUPPORT;
    return -1;
  }
  using Socket = int (*)(int, int, int);
  static const auto real = reinterpret_cast<Socket>(dlsym(RTLD_NEXT, "socket"));
  return real(domain, type, protocol);
}

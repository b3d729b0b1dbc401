// statfs(2), which Swift's Glibc module leaves out: the loader asks it which file system a file is on
// (proc and sysfs files report sizes that say nothing of their contents).
#if defined(__linux__)
#include <sys/vfs.h>
#endif

//
// test/dq/support/timerfd_passthrough.cpp
//
// A preload library for processes run under libfaketime (Debian `faketime`) with a clock
// ahead: timerfd_settime and timerfd_gettime go straight to the kernel.
//
// Why: Asio arms its timerfd at the absolute time 1 ns (TFD_TIMER_ABSTIME) for a timer that
// is already due, and libfaketime moves every absolute timerfd time back by its offset. With
// a clock 30 s ahead that lands before the epoch, the timerfd is never armed, and the
// io_context waits forever for a timer that was due. Relative timerfd times, the only other
// kind Asio uses, are not changed by libfaketime, so passing both calls through loses
// nothing of the skew: the process still reads a clock 30 s off on CLOCK_REALTIME and
// CLOCK_MONOTONIC alike.
//

#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

extern "C" {

int timerfd_settime(int fd, int flags, const itimerspec* new_value, itimerspec* old_value) {
    return static_cast<int>(::syscall(SYS_timerfd_settime, fd, flags, new_value, old_value));
}

int timerfd_gettime(int fd, itimerspec* curr_value) {
    return static_cast<int>(::syscall(SYS_timerfd_gettime, fd, curr_value));
}

} // extern "C"

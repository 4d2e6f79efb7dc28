//
// timewheel/detail/thread_check.hpp
//
// Debug-build detection of a wheel used from two threads at once.
//

#ifndef TIMEWHEEL_DETAIL_THREAD_CHECK_HPP
#define TIMEWHEEL_DETAIL_THREAD_CHECK_HPP

#include <atomic>
#include <thread>

// The handler it reports to is public: see timewheel::set_thread_misuse_handler() in
// wheel_service.hpp.

namespace timewheel {
namespace detail {

#if !defined(TIMEWHEEL_THREAD_CHECKS)
#if defined(NDEBUG)
#define TIMEWHEEL_THREAD_CHECKS 0
#else
#define TIMEWHEEL_THREAD_CHECKS 1
#endif
#endif

void report_thread_misuse(const char* what) noexcept;

// Marks the thread inside a wheel for the length of a scope. Re-entry from the same thread
// (a callback arming a timer) is fine; entry from a second thread while the first is inside
// is the programming error this catches.
class thread_check {
public:
#if TIMEWHEEL_THREAD_CHECKS
    class scope {
    public:
        explicit scope(thread_check& check) noexcept
            : check_(check) {
            const std::thread::id self = std::this_thread::get_id();
            std::thread::id expected{};
            if (check_.inside_.compare_exchange_strong(expected, self)) {
                owner_ = true;
            } else if (expected != self) {
                report_thread_misuse("timewheel: a wheel_service was used from two threads at "
                                     "once; a wheel belongs to one thread (or strand)");
            }
        }
        ~scope() {
            if (owner_) {
                check_.inside_.store(std::thread::id{});
            }
        }
        scope(const scope&) = delete;
        scope& operator=(const scope&) = delete;

    private:
        thread_check& check_;
        bool owner_ = false;
    };

#else
    class scope {
    public:
        explicit scope(thread_check&) noexcept {}
    };
#endif

private:
    // Present in every build so that the layout of the service does not depend on NDEBUG.
    std::atomic<std::thread::id> inside_{};
};

} // namespace detail
} // namespace timewheel

#endif // TIMEWHEEL_DETAIL_THREAD_CHECK_HPP

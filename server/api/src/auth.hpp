//
// server/api/src/auth.hpp
//
// The tokens in force: --token (an admin token) and the entries of --tokens-file, re-read
// on SIGHUP and when the file changes (polled: a stat a second, no inotify, so that a file
// replaced by an editor's rename or a config tool's symlink swap is seen too). A file that
// no longer parses is refused whole: the tokens in force stay, and the log says why. Every
// shard reads the set under a lock held for a pointer copy only.
//
#ifndef TIMEWHEELD_API_AUTH_HPP
#define TIMEWHEELD_API_AUTH_HPP

#include <timewheeld/service/log.hpp>
#include <timewheeld/service/settings.hpp>
#include <timewheeld/service/tokens.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace timewheeld::api {

class token_watch {
public:
    /// The tokens of `cfg` (--token, --tokens-file).
    /** @throws std::invalid_argument as token_set::read_file() does. */
    token_watch(const service::settings& cfg, service::logger& log);

    /// Whether any token is set: without one, the API is open (to the address it binds).
    bool enabled() const;

    /// The scope of `presented`, or nothing when no token in force is it.
    std::optional<service::scope> find(std::string_view presented) const;

    /// Re-reads the file (when there is one); `why` goes to the log ("SIGHUP", "changed").
    /// Returns whether the new tokens are in force.
    bool reload(std::string_view why);

    /// Re-read on SIGHUP (when `signals`) and on change, on `io`, until stop().
    void start(boost::asio::io_context& io, bool signals);
    void stop();

private:
    struct file_state {
        long long mtime_ns = -1;
        long long size = -1;
        unsigned long long inode = 0;
        bool operator==(const file_state&) const = default;
    };
    std::shared_ptr<const service::token_set> load() const;
    file_state stat_file() const;
    void wait_signal();
    void poll();

    std::string path_;
    std::string token_; // --token
    service::logger& log_;
    mutable std::mutex mutex_;
    std::shared_ptr<const service::token_set> current_;
    file_state seen_;
    std::optional<boost::asio::signal_set> hup_;
    std::optional<boost::asio::steady_timer> poll_;
};

} // namespace timewheeld::api

#endif // TIMEWHEELD_API_AUTH_HPP

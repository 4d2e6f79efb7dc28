//
// server/api/src/auth.cpp
//
// The tokens in force and their reloading (auth.hpp).
//
#include "auth.hpp"

#include <sys/stat.h>

#include <chrono>
#include <csignal>
#include <stdexcept>

namespace timewheeld::api {

token_watch::token_watch(const service::settings& cfg, service::logger& log)
    : path_(cfg.tokens_file)
    , token_(cfg.token)
    , log_(log) {
    seen_ = stat_file();
    current_ = load();
}

std::shared_ptr<const service::token_set> token_watch::load() const {
    auto set = path_.empty() ? service::token_set() : service::token_set::read_file(path_);
    if (!token_.empty()) {
        set.add(token_, service::scope::admin, "--token");
    }
    return std::make_shared<const service::token_set>(std::move(set));
}

bool token_watch::enabled() const {
    std::lock_guard lock(mutex_);
    return !current_->empty();
}

std::optional<service::scope> token_watch::find(std::string_view presented) const {
    std::shared_ptr<const service::token_set> set;
    {
        std::lock_guard lock(mutex_);
        set = current_;
    }
    return set->find(presented);
}

bool token_watch::reload(std::string_view why) {
    if (path_.empty()) {
        return false;
    }
    seen_ = stat_file();
    try {
        auto set = load();
        const auto count = set->entries().size();
        {
            std::lock_guard lock(mutex_);
            current_ = std::move(set);
        }
        log_.info("tokens_reloaded", {{"why", std::string(why)}, {"tokens", count}});
        return true;
    } catch (const std::invalid_argument& e) {
        log_.error(
            "tokens_refused",
            {{"why", std::string(why)}, {"error", e.what()}, {"kept", "the tokens in force"}});
        return false;
    }
}

token_watch::file_state token_watch::stat_file() const {
    struct ::stat st {};
    if (path_.empty() || ::stat(path_.c_str(), &st) != 0) {
        return {};
    }
    return {static_cast<long long>(st.st_mtim.tv_sec) * 1'000'000'000LL + st.st_mtim.tv_nsec,
            static_cast<long long>(st.st_size), static_cast<unsigned long long>(st.st_ino)};
}

void token_watch::start(boost::asio::io_context& io, bool signals) {
    if (path_.empty()) {
        return;
    }
    if (signals) {
        hup_.emplace(io, SIGHUP);
        wait_signal();
    }
    poll_.emplace(io);
    poll();
}

void token_watch::stop() {
    if (hup_) {
        boost::system::error_code ignored;
        hup_->cancel(ignored);
    }
    if (poll_) {
        poll_->cancel();
    }
}

void token_watch::wait_signal() {
    hup_->async_wait([this](boost::system::error_code ec, int) {
        if (!ec) {
            reload("SIGHUP");
            wait_signal();
        }
    });
}

void token_watch::poll() {
    poll_->expires_after(std::chrono::seconds(1));
    poll_->async_wait([this](boost::system::error_code ec) {
        if (ec) {
            return;
        }
        if (stat_file() != seen_) {
            reload("changed");
        }
        poll();
    });
}

} // namespace timewheeld::api

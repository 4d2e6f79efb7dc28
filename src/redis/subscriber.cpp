//
// src/redis/subscriber.cpp
//
// The subscriber: a connection in push mode, its subscriptions, and the parse of messages.
//

#include <timewheel/redis/subscriber.hpp>

#include <timewheel/redis/error.hpp>

#include <boost/asio/post.hpp>

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>

namespace timewheel::redis {

struct subscriber::state final : detail::connection_impl::push_handler {
    state(subscriber& owner, const executor_type& ex, config cfg)
        : owner_(owner)
        , impl_(std::make_shared<detail::connection_impl>(ex, std::move(cfg)))
        , op_([](detail::op_base*, boost::system::error_code, std::size_t, bool) {}) {
        op_.req_ = &req_;
        op_.resp_ = nullptr;
        op_.replies_ = 0; // answers come as pushes
        impl_->set_push_handler(this);
    }

    ~state() {
        impl_->set_push_handler(nullptr);
        impl_->close();
    }

    void on_push(const response& r) override {
        if (r.empty()) {
            return;
        }
        const reply root = r[0];
        if (root.is_error()) {
            // An SSUBSCRIBE sent to a node that does not serve the channel's slot (the
            // locator's map was stale: a failover, a reshard) is answered MOVED: ask where
            // again. Any other error is the server's own business (logged by nobody).
            if (locating_ && !shard_channels_.empty() &&
                root.error_message().starts_with("MOVED ")) {
                relocate();
            }
            return;
        }
        // Every part is checked before it is read: a reply of another shape (a broken or
        // hostile server) is dropped, not thrown from the read handler.
        if (!root.is_array() || root.size() < 3) {
            return;
        }
        const auto parts = root.elements();
        const auto text = [&](std::size_t i) -> std::optional<std::string_view> {
            if (i < parts.size() && parts[i].is_string()) {
                return parts[i].as_string();
            }
            return std::nullopt;
        };
        const std::string_view kind = text(0).value_or("");
        message m;
        if (kind == "message" || kind == "smessage") {
            const auto channel = text(1);
            const auto payload = text(2);
            if (!channel || !payload) {
                return;
            }
            m.kind = kind == "message" ? message::kind_type::message : message::kind_type::smessage;
            m.channel = *channel;
            m.payload = *payload;
        } else if (kind == "pmessage" && parts.size() >= 4) {
            const auto pattern = text(1);
            const auto channel = text(2);
            const auto payload = text(3);
            if (!pattern || !channel || !payload) {
                return;
            }
            m.kind = message::kind_type::pmessage;
            m.pattern = *pattern;
            m.channel = *channel;
            m.payload = *payload;
        } else {
            if (kind == "subscribe" || kind == "psubscribe" || kind == "ssubscribe") {
                ++confirmations_;
            } else if (kind == "sunsubscribe" && locating_) {
                // The server ended a shard subscription we still hold: its slot moved to
                // another master (a failover, a reshard). Subscribe where it is now.
                const auto channel = text(1);
                if (channel && shard_channels_.contains(std::string(*channel))) {
                    relocate();
                }
            }
            return;
        }
        if (!owner_.channel_.try_send(boost::system::error_code{}, std::move(m))) {
            ++dropped_;
        }
    }

    // Reconnects (after the backoff) to where the locator says now. Posted: this runs
    // within the connection's read handler.
    void relocate() {
        ++relocations_;
        boost::asio::post(impl_->get_executor(),
                          [impl = impl_] { impl->drop(make_error_code(error::not_master)); });
    }

    void on_ready() override {
        // A new connection: subscribe again to everything (this request replaces any
        // subscription change not yet written, which the sets already hold).
        req_.clear();
        add("SUBSCRIBE", channels_);
        add("PSUBSCRIBE", patterns_);
        add("SSUBSCRIBE", shard_channels_);
        send();
    }

    void add(std::string_view command, const std::set<std::string>& names) {
        if (!names.empty()) {
            req_.push_range(command, names);
        }
    }

    void change(std::string_view command, std::set<std::string>& names,
                const std::vector<std::string>& list, bool insert) {
        if (list.empty()) {
            return; // an empty UNSUBSCRIBE would mean all
        }
        for (const auto& n : list) {
            if (insert) {
                names.insert(n);
            } else {
                names.erase(n);
            }
        }
        if (op_.state_ != detail::op_base::state::queued) {
            req_.clear(); // the last one was written
        }
        req_.push_range(command, list);
        send();
    }

    void send() {
        if (!req_.empty() && !impl_->is_closed()) {
            impl_->start_internal(op_);
        }
    }

    subscriber& owner_;
    std::shared_ptr<detail::connection_impl> impl_;
    detail::op_base op_;
    request req_;
    std::set<std::string> channels_, patterns_, shard_channels_;
    std::uint64_t dropped_ = 0;
    std::uint64_t confirmations_ = 0;
    std::uint64_t relocations_ = 0;
    bool locating_ = false;
};

subscriber::subscriber(const executor_type& ex, config cfg, std::size_t max_buffered)
    : channel_(ex, max_buffered)
    , state_(std::make_unique<state>(*this, ex, std::move(cfg))) {}

subscriber::~subscriber() = default;

void subscriber::set_locator(locator l) {
    state_->locating_ = static_cast<bool>(l);
    state_->impl_->set_locator(std::move(l));
}

void subscriber::run() {
    state_->impl_->run();
}

void subscriber::subscribe(const std::vector<std::string>& channels) {
    state_->change("SUBSCRIBE", state_->channels_, channels, true);
}
void subscriber::psubscribe(const std::vector<std::string>& patterns) {
    state_->change("PSUBSCRIBE", state_->patterns_, patterns, true);
}
void subscriber::ssubscribe(const std::vector<std::string>& channels) {
    state_->change("SSUBSCRIBE", state_->shard_channels_, channels, true);
}
void subscriber::unsubscribe(const std::vector<std::string>& channels) {
    state_->change("UNSUBSCRIBE", state_->channels_, channels, false);
}
void subscriber::punsubscribe(const std::vector<std::string>& patterns) {
    state_->change("PUNSUBSCRIBE", state_->patterns_, patterns, false);
}
void subscriber::sunsubscribe(const std::vector<std::string>& channels) {
    state_->change("SUNSUBSCRIBE", state_->shard_channels_, channels, false);
}

void subscriber::close() {
    state_->channels_.clear();
    state_->patterns_.clear();
    state_->shard_channels_.clear();
    state_->impl_->close();
    channel_.close();
}

bool subscriber::is_connected() const noexcept {
    return state_->impl_->is_connected();
}
const connection_stats& subscriber::stats() const noexcept {
    return state_->impl_->stats();
}
std::uint64_t subscriber::dropped() const noexcept {
    return state_->dropped_;
}
std::uint64_t subscriber::confirmations() const noexcept {
    return state_->confirmations_;
}
std::uint64_t subscriber::relocations() const noexcept {
    return state_->relocations_;
}

} // namespace timewheel::redis

//
// src/dq/redis/store_impl.cpp
//
// The Redis store's state: its checked options and the key names and script header of each
// shard (from the key table, redis_keys.hpp), built once; what every operation shares (the
// token of a claim, a shard's script call, grouping by shard); and the calls that are neither
// a producer's nor a worker's: Redis's clock and every shard's earliest due time. The
// operations are in store_producer.cpp and store_worker.cpp.
//

#include "store_impl.hpp"

#include <timewheel/dq/detail/redis_keys.hpp>

#include <algorithm>
#include <stdexcept>

namespace timewheel::dq::detail {

using replies::ms;
using replies::number;
using replies::script_error;

namespace {

// The options, or std::invalid_argument: checked before anything is sized from them.
redis_store_options checked(redis_store_options opt) {
    if (opt.name.empty() || opt.name.find_first_of("{}") != std::string::npos) {
        throw std::invalid_argument(
            "dq::redis_store: the queue name must be non-empty and hold no '{' or '}'");
    }
    if (opt.shards == 0 || opt.shards > 16384) {
        throw std::invalid_argument("dq::redis_store: shards must be in 1..16384");
    }
    if (opt.buckets == 0 || opt.buckets > 65536) {
        throw std::invalid_argument("dq::redis_store: buckets must be in 1..65536");
    }
    if (opt.done_retention.count() < 0 || opt.dead_retention.count() < 0) {
        throw std::invalid_argument("dq::redis_store: retention must not be negative");
    }
    if (opt.wait_replicas > 0 && opt.wait_timeout.count() <= 0) {
        throw std::invalid_argument("dq::redis_store: wait_timeout must be positive");
    }
    return opt;
}

} // namespace

redis_store_impl::redis_store_impl(const executor_type& ex, std::unique_ptr<backend> b,
                                   redis::config sub_cfg, redis_store_options opt)
    : ex_(ex)
    , backend_(std::move(b))
    , sub_cfg_(std::move(sub_cfg))
    , opt_(checked(std::move(opt)))
    , schedule_(opt_.shards) {
    channel_ = redis_keys::wake_channel(opt_.name);
    config_key_ = redis_keys::config_key(opt_.name);
    keys_.resize(opt_.shards);
    prefixes_.resize(opt_.shards);
    for (std::size_t s = 0; s < opt_.shards; ++s) {
        const std::string p = redis_keys::shard_prefix(opt_.name, s);
        prefixes_[s] = p;
        keys_[s].reserve(redis_keys::shard_keys.size());
        for (const auto& k : redis_keys::shard_keys) {
            keys_[s].push_back(p + std::string(k.suffix));
        }
    }
    // ARGV[1..3] (lua/prelude/header.lua): the prefix (set per call), the numbers packed, the
    // channel. Every value fits 48 bits: counts are capped there (a count that large means
    // "no limit"), and durations and due times are checked below 2^48 ms.
    constexpr std::int64_t max48 = (std::int64_t(1) << 48) - 1;
    const auto cap = [](std::uint64_t v) {
        return static_cast<std::int64_t>(std::min<std::uint64_t>(v, max48));
    };
    std::string numbers;
    for (const auto v :
         {cap(opt_.shards), cap(opt_.buckets), cap(opt_.done_max),
          cap(static_cast<std::uint64_t>(opt_.done_retention.count())), cap(opt_.dead_max),
          cap(static_cast<std::uint64_t>(opt_.dead_retention.count())),
          cap(std::max<std::size_t>(opt_.log_maxlen, 1)),
          cap(static_cast<std::uint64_t>(max_due.time_since_epoch().count()))}) {
        replies::append_packed(numbers, v, 6);
    }
    header_ = {std::string(), std::move(numbers), channel_};
    std::random_device rd;
    rng_.seed((std::uint64_t(rd()) << 32) ^ rd());
}

void redis_store_impl::close() {
    closed_ = true;
    backend_->close();
    if (sub_) {
        sub_->close();
    }
}

// A claim call's token prefix: 64 random bits, six to a character, new for every call, so
// that no two leases (of any worker) share a token; the script appends the task's rank in
// the call (two characters). 13 characters in all: a token fits a std::string's own buffer,
// so holding, starting and acknowledging a lease allocates nothing for it.
std::string redis_store_impl::token_base() {
    static constexpr char digits[] =
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_";
    std::string t(11, '0');
    std::uint64_t v = rng_();
    for (auto& c : t) {
        c = digits[v & 63];
        v >>= 6;
    }
    return t;
}

void redis_store_impl::push_shard_script(exec_state& st, const scripts::function& s,
                                         std::size_t shard, call_args& a) {
    auto& req = st.req;
    header_[0] = prefixes_[shard];
    std::vector<std::string_view> args;
    args.reserve(header_.size() + a.args.size());
    for (const auto& h : header_) {
        args.emplace_back(h);
    }
    for (const auto& x : a.args) {
        args.emplace_back(x);
    }
    req.push_fcall_range(*s.library, s.name, keys_[shard], args);
    if (s.writes && opt_.wait_replicas != 0 && backend_->cluster()) {
        // Right after its script: the cluster sends it to the script's master (send()).
        st.waits.push_back(req.size());
        req.push("WAIT", static_cast<std::int64_t>(opt_.wait_replicas),
                 static_cast<std::int64_t>(opt_.wait_timeout.count()));
    }
}

auto redis_store_impl::take_waits(exec_state& st, std::uint64_t want) -> error_code {
    error_code ec;
    redis::response scripts;
    std::size_t next_wait = 0;
    for (std::size_t i = 0; i < st.resp.size(); ++i) {
        if (next_wait < st.waits.size() && st.waits[next_wait] == i) {
            ++next_wait;
            const auto r = st.resp[i];
            if (!r.is_integer() || r.as_integer() < 0 ||
                static_cast<std::uint64_t>(r.as_integer()) < want) {
                ec = error::not_replicated;
            }
            continue;
        }
        scripts.append(st.resp[i]);
    }
    if (next_wait != st.waits.size()) {
        ec = error::store_error; // fewer replies than commands: not the store's request
    }
    st.resp = std::move(scripts);
    return ec;
}

auto redis_store_impl::group(const std::vector<std::string_view>& ids) const -> grouping {
    grouping g;
    std::vector<std::size_t> call_of(opt_.shards, std::size_t(-1));
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const std::size_t s = shard_of(ids[i]);
        if (call_of[s] == std::size_t(-1)) {
            call_of[s] = g.shards.size();
            g.shards.push_back(s);
            g.members.emplace_back();
        }
        g.members[call_of[s]].push_back(i);
    }
    return g;
}

std::vector<std::string_view> redis_store_impl::ids_of(const std::vector<lease_ref>& leases) {
    std::vector<std::string_view> ids;
    ids.reserve(leases.size());
    for (const auto& l : leases) {
        ids.emplace_back(l.id);
    }
    return ids;
}

// Every shard's earliest delayed due time (its `d` set or its first slot) and Redis's clock,
// in one pipeline; the earliest of all, the latest clock reading.
void redis_store_impl::earliest_due(
    store::handler<void(error_code, time_point, std::optional<time_point>)> h) {
    auto st = std::make_shared<exec_state>();
    for (std::size_t s = 0; s < opt_.shards; ++s) {
        call_args a;
        push_shard_script(*st, scripts::earliest_due(), s, a);
    }
    st->read_only = true;
    run(st, [self = shared_from_this(), h = std::move(h)](error_code ec,
                                                          redis::response& resp) mutable {
        time_point now{};
        std::optional<time_point> earliest;
        for (std::size_t i = 0; !ec && i < resp.size(); ++i) {
            auto rep = resp[i];
            if (rep.is_error()) {
                ec = script_error(rep);
            } else if (!rep.is_array() || rep.size() != 2 || !rep[0].is_integer() ||
                       !rep[1].is_integer() || !replies::is_time(rep[0].as_integer()) ||
                       (rep[1].as_integer() != -1 && !replies::is_time(rep[1].as_integer()))) {
                ec = error::store_error; // the clock and the earliest due: times, or -1
            } else {
                now = std::max(now, ms(rep[0].as_integer()));
                if (const auto e = rep[1].as_integer(); e >= 0) {
                    earliest = earliest ? std::min(*earliest, ms(e)) : ms(e);
                }
            }
        }
        if (ec) {
            now = {};
            earliest.reset();
        }
        self->finish(std::move(h), ec, now, earliest);
    });
}

void redis_store_impl::now(store::handler<void(error_code, time_point)> h) {
    auto st = std::make_shared<exec_state>();
    st->req.push("TIME");
    send(st, [self = shared_from_this(), h = std::move(h)](error_code ec,
                                                           redis::response& resp) mutable {
        time_point t{};
        if (!ec) {
            if (const auto v = replies::time_reply(resp[0])) {
                t = ms(*v);
            } else {
                ec = error::store_error;
            }
        }
        self->finish(std::move(h), ec, t);
    });
}

} // namespace timewheel::dq::detail

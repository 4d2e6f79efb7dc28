//
// timewheel/redis/detail/cluster_impl.hpp
//
// The state behind a redis::cluster, shared with its operations in flight (so that a request
// outliving the cluster object finds its connections closed, not freed): the slot map, one
// connection per master, and the coroutines that run requests and refreshes (defined in
// src/redis/cluster.cpp). cluster_completion adapts a coroutine's completion to the caller's
// handler and forwards the handler's associated executor, allocator and cancellation slot.
//

#ifndef TIMEWHEEL_REDIS_DETAIL_CLUSTER_IMPL_HPP
#define TIMEWHEEL_REDIS_DETAIL_CLUSTER_IMPL_HPP

#include <timewheel/redis/cluster_config.hpp>
#include <timewheel/redis/config.hpp>
#include <timewheel/redis/connection.hpp>
#include <timewheel/redis/detail/cluster_slot_map.hpp>
#include <timewheel/redis/request.hpp>
#include <timewheel/redis/response.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associator.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace timewheel::redis::detail {

class cluster_impl : public std::enable_shared_from_this<cluster_impl> {
public:
    using executor_type = boost::asio::any_io_executor;
    using exec_result = std::tuple<boost::system::error_code, std::size_t>;
    using error_code_type = boost::system::error_code;

    cluster_impl(executor_type const& ex, cluster_config cfg);
    ~cluster_impl();

    executor_type const& get_executor() const noexcept { return executor_; }
    cluster_config const& get_config() const noexcept { return config_; }
    cluster_stats const& stats() const noexcept { return stats_; }
    std::size_t master_count() const noexcept;
    std::size_t node_count() const noexcept { return map_.live_count(); }
    void close();

    static boost::asio::awaitable<exec_result> exec(std::shared_ptr<cluster_impl> self,
                                                    request const* req, response* resp,
                                                    std::optional<std::string> key);
    static boost::asio::awaitable<std::tuple<boost::system::error_code>>
    refresh_op(std::shared_ptr<cluster_impl> self);
    static boost::asio::awaitable<std::tuple<boost::system::error_code, config>>
    node_config_op(std::shared_ptr<cluster_impl> self, std::uint16_t slot);

private:
    struct command_state;
    struct attempt;

    boost::asio::awaitable<boost::system::error_code> run(request const& req, response& resp,
                                                          std::optional<std::string> const& key);
    boost::asio::awaitable<boost::system::error_code> refresh();
    void refresh_in_background(std::shared_ptr<cluster_impl> const& self);
    std::shared_ptr<connection> connection_to(std::uint16_t node);
    error_code_type use_map(std::vector<cluster_slot_range> const& ranges);
    config node_config(std::uint16_t node) const;
    std::uint16_t any_master();

    executor_type executor_;
    cluster_config config_;
    cluster_slot_map map_;
    // By node index, opened lazily; a request holds its connection's pointer while it runs,
    // so a node forgotten meanwhile keeps its connection until the request is done.
    std::vector<std::shared_ptr<connection>> connections_;
    std::size_t seed_count_ = 0;         // the first nodes are the seeds, never forgotten
    std::vector<std::uint16_t> masters_; // nodes serving slots, last map
    std::size_t next_master_ = 0;
    std::chrono::steady_clock::time_point last_refresh_{};
    boost::asio::steady_timer refresh_timer_; // spaces the background refreshes
    bool refreshing_ = false;
    bool closed_ = false;
    cluster_stats stats_;
};

/// The completion handler given to co_spawn: unpacks the coroutine's result tuple into the
/// caller's handler. An exception escaping the coroutine (allocation failure) is rethrown,
/// as Asio rethrows from a detached coroutine.
template <typename Handler>
class cluster_completion {
public:
    explicit cluster_completion(Handler h)
        : handler_(std::move(h)) {}

    template <typename... Results>
    void operator()(std::exception_ptr e, std::tuple<Results...> results) {
        if (e)
            std::rethrow_exception(e);
        std::apply(std::move(handler_), std::move(results));
    }

    Handler const& get() const noexcept { return handler_; }

private:
    Handler handler_;
};

} // namespace timewheel::redis::detail

namespace boost::asio {

template <template <typename, typename> class Associator, typename Handler,
          typename DefaultCandidate>
struct associator<Associator, timewheel::redis::detail::cluster_completion<Handler>,
                  DefaultCandidate> {
    using type = typename Associator<Handler, DefaultCandidate>::type;

    static type get(timewheel::redis::detail::cluster_completion<Handler> const& h) noexcept {
        return Associator<Handler, DefaultCandidate>::get(h.get());
    }

    static auto get(timewheel::redis::detail::cluster_completion<Handler> const& h,
                    DefaultCandidate const& c) noexcept
        -> decltype(Associator<Handler, DefaultCandidate>::get(h.get(), c)) {
        return Associator<Handler, DefaultCandidate>::get(h.get(), c);
    }
};

} // namespace boost::asio

#endif // TIMEWHEEL_REDIS_DETAIL_CLUSTER_IMPL_HPP

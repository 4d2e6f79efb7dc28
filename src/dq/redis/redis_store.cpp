//
// src/dq/redis/redis_store.cpp
//
// dq::redis_store, the public face of the Redis store: it picks the backend (one server or a
// Cluster) and hands every checked operation to the shared state of store_impl.hpp, which
// outlives the store while requests are in flight. The store's parts, in this folder:
// backend.hpp (where requests go), store_impl.* (the shared state), store_producer.cpp and
// store_worker.cpp (the operations), replies.* (decoding), shard_schedule.* (which shards a
// claim visits), scripts.* and lua/ (the Lua programs); the key layout is
// include/timewheel/dq/detail/redis_keys.hpp.
//

#include <timewheel/dq/redis_store.hpp>

#include "store_impl.hpp"

#include <utility>

namespace timewheel::dq {

redis_store::redis_store(const executor_type& ex, redis::config cfg, redis_store_options opt)
    : impl_(std::make_shared<detail::redis_store_impl>(
          ex, std::make_unique<detail::connection_backend>(ex, cfg), cfg, std::move(opt))) {}

redis_store::redis_store(const executor_type& ex, redis::cluster_config cfg,
                         redis_store_options opt)
    : impl_(std::make_shared<detail::redis_store_impl>(
          ex, std::make_unique<detail::cluster_backend>(ex, cfg), cfg.node, std::move(opt))) {}

redis_store::~redis_store() {
    impl_->close();
}

const redis_store_options& redis_store::options() const noexcept {
    return impl_->options();
}

std::size_t redis_store::shard_of(std::string_view id) const noexcept {
    return impl_->shard_of(id);
}

std::uint32_t redis_store::hash(std::string_view id) noexcept {
    // Redis Cluster's hash tag rule: the bytes between the first '{' and the first '}' after
    // it, when there is at least one.
    if (const auto open = id.find('{'); open != std::string_view::npos) {
        if (const auto close = id.find('}', open + 1);
            close != std::string_view::npos && close > open + 1) {
            id = id.substr(open + 1, close - open - 1);
        }
    }
    std::uint32_t h = 5381;
    for (unsigned char c : id) {
        h = h * 33 + c;
    }
    return h;
}

void redis_store::close() {
    impl_->close();
}

store::executor_type redis_store::get_executor() const {
    return impl_->get_executor();
}

const dq::limits& redis_store::get_limits() const noexcept {
    return impl_->options().limits;
}

void redis_store::do_submit(
    task t, handler<void(boost::system::error_code, submit_result, std::string)> h) {
    impl_->submit(std::move(t), std::move(h));
}

void redis_store::do_cancel(std::string id,
                            handler<void(boost::system::error_code, cancel_result)> h) {
    impl_->cancel(std::move(id), std::move(h));
}

void redis_store::do_reschedule(std::string id, due_time due,
                                handler<void(boost::system::error_code)> h) {
    impl_->simple(detail::scripts::reschedule(), std::move(id), due, std::move(h));
}

void redis_store::do_status(std::string id,
                            handler<void(boost::system::error_code, task_status)> h) {
    impl_->status(std::move(id), std::move(h));
}

void redis_store::do_list_dead(std::string cursor, std::size_t count,
                               handler<void(boost::system::error_code, dead_page)> h) {
    impl_->list_dead(std::move(cursor), count, std::move(h));
}

void redis_store::do_requeue_dead(std::string id, due_time due,
                                  handler<void(boost::system::error_code)> h) {
    impl_->simple(detail::scripts::requeue_dead(), std::move(id), due, std::move(h));
}

void redis_store::do_delete_dead(std::string id, handler<void(boost::system::error_code)> h) {
    impl_->simple(detail::scripts::delete_dead(), std::move(id), std::nullopt, std::move(h));
}

void redis_store::do_claim(const claim_options& opt,
                           handler<void(boost::system::error_code, claim_result)> h) {
    impl_->claim(opt, std::move(h));
}

void redis_store::do_start(std::vector<lease_ref> leases,
                           handler<void(boost::system::error_code, std::vector<start_result>)> h) {
    impl_->start(std::move(leases), std::move(h));
}

void redis_store::do_renew(std::vector<lease_ref> leases, duration lease,
                           handler<void(boost::system::error_code, std::vector<ack_result>)> h) {
    impl_->renew(std::move(leases), lease, std::move(h));
}

void redis_store::do_acknowledge(
    std::vector<ack> acks, handler<void(boost::system::error_code, std::vector<ack_result>)> h) {
    impl_->acknowledge(std::move(acks), std::move(h));
}

void redis_store::do_release(std::vector<lease_ref> leases,
                             handler<void(boost::system::error_code)> h) {
    impl_->release(std::move(leases), std::move(h));
}

void redis_store::wait_wakeup(handler<void(boost::system::error_code, time_point)> h) {
    impl_->wait_wakeup(std::move(h));
}

void redis_store::now(handler<void(boost::system::error_code, time_point)> h) {
    impl_->now(std::move(h));
}

void redis_store::probe(handler<void(boost::system::error_code, time_point)> h) {
    impl_->now(std::move(h));
}

void redis_store::do_create_queue(queue_spec spec,
                                  handler<void(boost::system::error_code, create_queue_result)> h) {
    impl_->create_queue(std::move(spec), std::move(h));
}
void redis_store::do_update_queue(queue_spec spec, handler<void(boost::system::error_code)> h) {
    impl_->update_queue(std::move(spec), std::move(h));
}
void redis_store::do_get_queue(std::string id,
                               handler<void(boost::system::error_code, queue_status)> h) {
    impl_->get_queue(std::move(id), std::move(h));
}
void redis_store::do_list_queues(std::string id_prefix, std::string cursor, std::size_t count,
                                 handler<void(boost::system::error_code, queue_page)> h) {
    impl_->list_queues(std::move(id_prefix), std::move(cursor), count, std::move(h));
}
void redis_store::do_delete_queue(std::string id, handler<void(boost::system::error_code)> h) {
    impl_->delete_queue(std::move(id), std::move(h));
}

void redis_store::do_list_tasks(
    task_query q, std::optional<task_position> from,
    handler<void(boost::system::error_code, task_page, std::optional<task_position>)> h) {
    impl_->list_tasks(std::move(q), std::move(from), std::move(h));
}

void redis_store::do_count_tasks(handler<void(boost::system::error_code, task_counts)> h) {
    impl_->count_tasks(std::move(h));
}

void redis_store::earliest_due(
    handler<void(boost::system::error_code, time_point, std::optional<time_point>)> h) {
    impl_->earliest_due(std::move(h));
}

} // namespace timewheel::dq

//
// timewheeld/service/task_list.hpp
//
// GET /v1/tasks, the listing of tasks by state, as the service understands it: its query
// parameters checked one by one into a dq::task_query (each refusal names its parameter,
// and nothing is read), the `host` filter the store knows nothing of (the service applies
// it to each entry's callback URL), and an entry as the list shows it: no headers and no
// body (GET /v1/tasks/{id} shows those, secrets hidden).
//
//     state=delayed|prefetched|running|finished|dead|cancelled    required
//     order=asc|desc        by due time (soonest first) for delayed, prefetched and running;
//                           by end time (newest first) for finished, dead and cancelled
//     due_after= due_before=        RFC 3339, any offset; delayed/prefetched/running only
//     ended_after= ended_before=    the same for finished/dead/cancelled; after <= t < before
//     id_prefix= host= limit=1..1000 (100) cursor=
//
#ifndef TIMEWHEELD_SERVICE_TASK_LIST_HPP
#define TIMEWHEELD_SERVICE_TASK_LIST_HPP

#include <timewheeld/service/task_json.hpp>

#include <timewheel/dq/store.hpp>
#include <timewheel/dq/task.hpp>

#include <boost/json/object.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace timewheeld::service {

/// A listing as asked: what the store reads, and the service's own filter.
struct task_list_request {
    dq::task_query query;
    /// The callback's destination: "" any; "host" any port; "host:port" that one (lower
    /// case, an IPv6 literal in brackets: as node_figures names them).
    std::string host;
};

/// The parameters of GET /v1/tasks, percent-decoded, in their order (a name may appear
/// twice: refused). @throws invalid_field naming the parameter (see the top of this file)
task_list_request parse_task_list(const std::vector<std::pair<std::string, std::string>>& params,
                                  const validation_limits& limits);

/// Whether `destination` ("host:port", destination_of()) passes the `host` filter.
bool host_matches(std::string_view filter, std::string_view destination) noexcept;

/// An entry of the list: id, state, due_at, ended_at (ended states), attempt, last_error,
/// callback {method, url} (null when the store no longer keeps it). Its destination is
/// written into `destination` ("" when it has none).
boost::json::object task_entry_to_json(const dq::task_page::entry& e,
                                       const validation_limits& limits, std::string& destination);

} // namespace timewheeld::service

#endif // TIMEWHEELD_SERVICE_TASK_LIST_HPP

// A consumer of the installed timewheel::dq (and, through it, timewheel::redis): compiles
// against the installed headers and links the installed libraries.
#include <timewheel/dq/error.hpp>
#include <timewheel/dq/queue.hpp>
#include <timewheel/redis/request.hpp>
#ifdef CONSUMER_DQ_SQLITE
#include <timewheel/dq/sqlite_store.hpp>
#endif

#include <iostream>
#include <string>

int main() {
    namespace dq = timewheel::dq;
    timewheel::redis::request req;
    req.push("PING");
    const std::string name = dq::error_category().name();
    if (req.size() != 1 || name != "timewheel.dq") {
        std::cerr << "consumer_components: unexpected " << req.size() << " " << name << '\n';
        return 1;
    }
#ifdef CONSUMER_DQ_SQLITE
    const std::string sqlite = dq::sqlite_category().name();
    if (sqlite != "timewheel.dq.sqlite") {
        std::cerr << "consumer_components: unexpected " << sqlite << '\n';
        return 1;
    }
    std::cout << "consumer_components: timewheel::dq_sqlite links\n";
#endif
    std::cout << "consumer_components: timewheel::dq and timewheel::redis link\n";
    return 0;
}

// A consumer of the installed timewheel::dq (and, through it, timewheel::redis): compiles
// against the installed headers and links the installed libraries.
#include <timewheel/dq/error.hpp>
#include <timewheel/dq/queue.hpp>
#include <timewheel/redis/request.hpp>

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
    std::cout << "consumer_components: timewheel::dq and timewheel::redis link\n";
    return 0;
}

//
// test/dq/error.cpp
//
// The dq::error category names what went wrong.
//

#define BOOST_TEST_MODULE dq_error
#include <boost/test/unit_test.hpp>

#include <timewheel/dq/error.hpp>

#include <boost/system/error_code.hpp>

namespace dq = timewheel::dq;

BOOST_AUTO_TEST_CASE(codes_carry_the_category_and_a_message_naming_the_fault) {
    boost::system::error_code ec = dq::error::payload_too_large;
    BOOST_TEST(ec.category().name() == std::string("timewheel.dq"));
    BOOST_TEST(ec.message().find("payload") != std::string::npos);
    BOOST_TEST(ec != boost::system::error_code(dq::error::id_too_long));
    for (int v = static_cast<int>(dq::error::empty_id);
         v <= static_cast<int>(dq::error::store_too_old); ++v) {
        BOOST_TEST(dq::error_category().message(v).find("unknown") == std::string::npos);
    }
    BOOST_TEST(dq::error_category().message(999).find("unknown") != std::string::npos);
    BOOST_TEST(boost::system::error_code(dq::error::store_too_old).message().find("Redis 7.0") !=
               std::string::npos);
}

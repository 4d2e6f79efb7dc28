# Runs an example as a test: passes when the program exits with status 0 AND its output
# matches EXPECT (ctest alone checks only one of the two: once PASS_REGULAR_EXPRESSION is
# set, it ignores the exit status).
# Usage: cmake -DEXPECT=<regex> -P run_example.cmake -- <program> [args...]
if(NOT DEFINED EXPECT)
  message(FATAL_ERROR "run_example.cmake: EXPECT (a regular expression) is not set")
endif()
set(command "")
set(after_separator FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(after_separator)
    list(APPEND command "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} STREQUAL "--")
    set(after_separator TRUE)
  endif()
endforeach()
if(NOT command)
  message(FATAL_ERROR "run_example.cmake: no program given after --")
endif()

execute_process(COMMAND ${command} RESULT_VARIABLE status OUTPUT_VARIABLE output
                ERROR_VARIABLE output)
message("${output}")
if(NOT status STREQUAL "0")
  message(FATAL_ERROR "example failed: `${command}` exited with status ${status}")
endif()
if(NOT output MATCHES "${EXPECT}")
  message(FATAL_ERROR "example failed: its output does not match '${EXPECT}'")
endif()

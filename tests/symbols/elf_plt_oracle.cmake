# elf_plt_oracle.cmake — cmake -DOBJDUMP=... -DIN=<file> -DOUT=<file> -P this
# Writes objdump's disassembly of IN's PLT sections (.plt, .plt.sec,
# .plt.got: those it has) to OUT: the "<name@plt>" labels are the oracle
# of test_elf_names. objdump fails on a -j section the file lacks, so each
# is asked for alone and failures are ignored.
file(WRITE ${OUT} "")
foreach(section .plt .plt.sec .plt.got)
  execute_process(COMMAND ${OBJDUMP} -d -j ${section} ${IN}
    OUTPUT_VARIABLE text ERROR_QUIET RESULT_VARIABLE rc)
  if(rc EQUAL 0)
    file(APPEND ${OUT} "${text}")
  endif()
endforeach()

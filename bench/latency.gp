# The latency distribution of bash -c 'cat small_file': direct, through
# toolrun, through the PATH-shim baseline, and through the floor (bench/
# floor/, one hop and two), as cumulative fractions.
# toolrun-bench runs it: gnuplot -e "dat='latency.dat'" -e "png='latency.png'" latency.gp
set terminal png size 960,560 font ",11"
set output png
stats dat using 1 nooutput
n = STATS_records
set title "bash -c 'cat small\\_file', ".n." calls each way, interleaved"
set logscale x 10
set xlabel "wall time per call, ms (log scale)"
set ylabel "fraction of calls at most that long"
set yrange [0:1]
set key bottom right
set grid
plot dat using 1:(1.0/n) smooth cumulative title "direct" lw 2, \
     dat using 2:(1.0/n) smooth cumulative title "toolrun (LD\\_PRELOAD + toolrund)" lw 2, \
     dat using 3:(1.0/n) smooth cumulative title "PATH shim (bash + socat + C daemon)" lw 2, \
     dat using 4:(1.0/n) smooth cumulative title "the floor, 1 hop" lw 1 dt 2, \
     dat using 5:(1.0/n) smooth cumulative title "the floor, 2 hops" lw 1 dt 3

#!/bin/bash
# usage: ab.sh CLONE NAME "pytest args..." -> wall, CPU (user+sys of pytest's tree), the box's idle share
C=$1; N=$2; shift 2
cd $C
read -r c a b d e f g h rest < /proc/stat; t1=$((a+b+d+e+f+g+h)); i1=$e
T0=$(date +%s.%N)
/usr/bin/time -f "%e s wall %U user %S sys" env QT_QPA_PLATFORM=xcb .venv/bin/python -m pytest -q -p no:cacheprovider $@ > /work/team/s20/suite20/AB_$N.log 2>&1
read -r c a b d e f g h rest < /proc/stat; t2=$((a+b+d+e+f+g+h))
echo "$N: $(tail -2 /work/team/s20/suite20/AB_$N.log | tr '\n' ' ') box idle $(( 100*(e-i1)/(t2-t1) ))% load $(cut -d' ' -f1-3 /proc/loadavg)"

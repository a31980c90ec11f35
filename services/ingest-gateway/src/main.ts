#!/usr/bin/env node
import { runService } from '@svc/service';
import { gatewayService } from './service';

runService(gatewayService);
